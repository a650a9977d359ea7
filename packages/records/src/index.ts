export * from "./fields.ts";
export * from "./present.ts";
export * from "./schemas.ts";
export { formatTimestamp } from "./timestamps.ts";

/** Where the Kits v1 interface answers, below the service's base URL (the API's routes, the worker's record URLs). */
export const API_PREFIX = "/api/kits/v1";
