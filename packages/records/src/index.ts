export * from "./fields.ts";
export * from "./present.ts";
export * from "./schemas.ts";
export { formatTimestamp } from "./timestamps.ts";
