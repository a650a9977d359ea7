export * from "./catalogue.ts";
export * from "./job-failure.ts";
export * from "./ensemble-names.ts";
export { jobOutputKeys, KEY_AREAS, pipelineStepInputKey, uploadKey, voiceModelKeys } from "./storage-keys.ts";
export { VOCAL_REPAIR_STEPS, isVocalRepairStep, parseVocalRepairSteps, type VocalRepairStep } from "./repair-steps.ts";
export * from "./output-options.ts";
export * from "./pipelines.ts";
export * from "./harmony-options.ts";
