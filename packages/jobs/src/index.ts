export * from "./catalogue.ts";
export * from "./job-failure.ts";
export * from "./ensemble-names.ts";
