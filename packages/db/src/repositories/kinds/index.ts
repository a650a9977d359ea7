import type { JobTableKind } from "@mixdown/jobs";
import type { JobFiles } from "../job-files.ts";
import type { JobTable, JobTableRows } from "../job-table.ts";
import { audioAnalysisRows } from "./audio-analysis.ts";
import { harmonyRows } from "./harmony.ts";
import { masteringRows } from "./mastering.ts";
import { pipelineRows } from "./pipeline.ts";
import { separationRows } from "./separation.ts";
import { ttsRows } from "./tts.ts";
import { voiceBlendRows } from "./voice-blend.ts";
import { vocalRepairRows } from "./vocal-repair.ts";
import { voiceConversionRows } from "./voice-conversion.ts";

/**
 * The database side of every job table kind of the catalogue, one line each (each kind's file in
 * this folder holds its repository, its job table, its counts and its webhook row). Keyed by the
 * catalogue's `JobTableKind`: a kind added there does not compile until it has a line here.
 */
export const JOB_TABLE_ROWS = {
  separation: separationRows,
  "voice-conversion": voiceConversionRows,
  "voice-blend": voiceBlendRows,
  tts: ttsRows,
  "audio-analysis": audioAnalysisRows,
  "vocal-repair": vocalRepairRows,
  mastering: masteringRows,
  harmony: harmonyRows,
  pipeline: pipelineRows,
} satisfies JobTableRowsByKind;

/** The job table kinds whose rows keep files, with their files (the retention sweep's tables). */
export function jobFileTables(): Array<{ kind: JobTableKind; files: JobFiles }> {
  return Object.values(JOB_TABLE_ROWS).flatMap((rows) => (rows.files ? [{ kind: rows.kind, files: rows.files }] : []));
}

/** One `JobTableRows` per job table kind (a test holds a map missing one to a compile error). */
export type JobTableRowsByKind = { [K in JobTableKind]: JobTableRows<K, any, any, any> };

type RowsOf<K extends JobTableKind> = (typeof JOB_TABLE_ROWS)[K];
/** What a job table kind's handler receives and hands back, read off its rows. */
export type TableRowTypes<K extends JobTableKind> =
  ReturnType<RowsOf<K>["table"]> extends JobTable<infer Runnable, infer Output> ? { runnable: Runnable; output: Output } : never;
/** The row a job table kind's webhook presents. */
export type WebhookRowOf<K extends JobTableKind> = NonNullable<Awaited<ReturnType<RowsOf<K>["webhookRow"]>>>;

export {
  SeparationJobRepository,
  separationRows,
  separationStorage,
  type NewSeparationJob,
  type SeparationOutputs,
  type StoredStem,
} from "./separation.ts";
export {
  VoiceConversionJobRepository,
  voiceConversionRows,
  voiceConversionStorage,
  type NewVoiceConversionJob,
  type RunnableVoiceConversion,
  type VoiceConversionJobWithModel,
  type VoiceConversionOutputs,
} from "./voice-conversion.ts";
export {
  VoiceBlendJobRepository,
  voiceBlendRows,
  voiceBlendStorage,
  type NewVoiceBlendJob,
  type RunnableVoiceBlend,
  type VoiceBlendOutput,
} from "./voice-blend.ts";
export {
  TtsJobRepository,
  ttsRows,
  ttsStorage,
  type NewTtsJob,
  type RunnableTts,
  type TtsJobWithModel,
  type TtsOutputs,
} from "./tts.ts";
export {
  AudioAnalysisJobRepository,
  audioAnalysisRows,
  audioAnalysisStorage,
  type AudioAnalysisOutput,
  type NewAudioAnalysisJob,
} from "./audio-analysis.ts";
export {
  VocalRepairJobRepository,
  vocalRepairRows,
  vocalRepairStorage,
  type NewVocalRepairJob,
  type VocalRepairOutputs,
} from "./vocal-repair.ts";
export {
  MasteringJobRepository,
  masteringRows,
  masteringStorage,
  type MasteringOutputs,
  type NewMasteringJob,
} from "./mastering.ts";
export { HarmonyJobRepository, harmonyRows, harmonyStorage, type HarmonyOutputs, type NewHarmonyJob } from "./harmony.ts";
export {
  PipelineRepository,
  pipelineRows,
  pipelineStorage,
  startPipelineStep,
  withStepJobs,
  type NewPipeline,
  type NewPipelineStep,
  type PipelineStepWithJob,
  type PipelineWithSteps,
  type StepJobState,
} from "./pipeline.ts";
