import type { JobKind, JobRef } from "@mixdown/jobs";
import type { PrismaClient, SeparationJob, VoiceModel } from "../generated/prisma/client.ts";
import type { JobTable, JobTableOptions, JobTables } from "./job-table.ts";
import { separationJobTable, type SeparationOutputs } from "./separation-job-runs.ts";
import { ttsJobTable, type RunnableTts, type TtsOutputs } from "./tts-job-runs.ts";
import { voiceBlendJobTable, type RunnableVoiceBlend, type VoiceBlendOutput } from "./voice-blend-job-runs.ts";
import {
  voiceConversionJobTable,
  type RunnableVoiceConversion,
  type VoiceConversionOutputs,
} from "./voice-conversion-job-runs.ts";
import { voiceModelBuildTable, type BuiltVoiceModel, type VoiceModelToBuild } from "./voice-model-builds.ts";
import { voiceModelMediaTable, type RenderedVoiceMedia } from "./voice-model-media.ts";
import { webhookDeliveryTable, type WebhookDelivered, type WebhookDeliveryToSend } from "./webhook-deliveries.ts";

/** What each kind's handler receives from its table and hands back to it. */
export interface JobRowTypes {
  separation: { runnable: SeparationJob; output: SeparationOutputs };
  "voice-conversion": { runnable: RunnableVoiceConversion; output: VoiceConversionOutputs };
  "voice-blend": { runnable: RunnableVoiceBlend; output: VoiceBlendOutput };
  tts: { runnable: RunnableTts; output: TtsOutputs };
  "voice-model-media": { runnable: VoiceModel; output: RenderedVoiceMedia };
  "voice-model-build": { runnable: VoiceModelToBuild; output: BuiltVoiceModel };
  "webhook-delivery": { runnable: WebhookDeliveryToSend; output: WebhookDelivered };
}
export type MixdownJobTables = JobTables<JobRowTypes>;
export type RunnableOf<K extends JobKind> = JobRowTypes[K]["runnable"];
export type OutputOf<K extends JobKind> = JobRowTypes[K]["output"];

/**
 * The table of every job kind in the catalogue. `options.onWebhookOwed` hears of each webhook a
 * job's end wrote, after its commit (to queue it at once; else the reconciler does).
 */
export function createJobTables(prisma: PrismaClient, options: JobTableOptions = {}): MixdownJobTables {
  return {
    separation: separationJobTable(prisma, options),
    "voice-conversion": voiceConversionJobTable(prisma, options),
    "voice-blend": voiceBlendJobTable(prisma, options),
    tts: ttsJobTable(prisma, options),
    "voice-model-media": voiceModelMediaTable(prisma),
    "voice-model-build": voiceModelBuildTable(prisma),
    "webhook-delivery": webhookDeliveryTable(prisma),
  };
}

/** The table of a queue entry's kind, without the per-kind row types (the reconciler needs none). */
export function tableOf(tables: MixdownJobTables, ref: JobRef): JobTable<unknown, unknown> {
  return tables[ref.queue] as JobTable<unknown, unknown>;
}
