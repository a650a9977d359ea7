export * from "./catalogue.ts";
export * from "./job-failure.ts";
