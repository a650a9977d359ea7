export * from "./catalogue.ts";
export * from "./job-failure.ts";
export * from "./ensemble-names.ts";
export { jobOutputKeys, KEY_AREAS, pipelineStepInputKey, uploadKey, voiceModelKeys } from "./storage-keys.ts";
export * from "./pipelines.ts";
