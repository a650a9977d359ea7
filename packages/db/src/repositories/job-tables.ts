import { JOB_TABLE_KINDS, type JobKind, type JobRef, type JobTableKind } from "@mixdown/jobs";
import type { ModelInstall, PrismaClient, VoiceModel } from "../generated/prisma/client.ts";
import type { JobTable, JobTableOptions, JobTables } from "./job-table.ts";
import { JOB_TABLE_ROWS, type TableRowTypes } from "./kinds/index.ts";
import { modelInstallTable, type ModelInstalled } from "./model-installs.ts";
import { voiceModelBuildTable, type BuiltVoiceModel, type VoiceModelToBuild } from "./voice-model-builds.ts";
import { voiceModelMediaTable, type RenderedVoiceMedia } from "./voice-model-media.ts";
import { webhookDeliveryTable, type WebhookDelivered, type WebhookDeliveryToSend } from "./webhook-deliveries.ts";

/** What each kind's handler receives from its table and hands back to it. */
export type JobRowTypes = { [K in JobTableKind]: TableRowTypes<K> } & {
  "voice-model-media": { runnable: VoiceModel; output: RenderedVoiceMedia };
  "voice-model-build": { runnable: VoiceModelToBuild; output: BuiltVoiceModel };
  "webhook-delivery": { runnable: WebhookDeliveryToSend; output: WebhookDelivered };
  "model-install": { runnable: ModelInstall; output: ModelInstalled };
};
export type MixdownJobTables = JobTables<JobRowTypes>;
export type RunnableOf<K extends JobKind> = JobRowTypes[K]["runnable"];
export type OutputOf<K extends JobKind> = JobRowTypes[K]["output"];

/**
 * The table of every job kind in the catalogue: the job table kinds' from their rows
 * (`kinds/`), the others' (a voice model's build and media, the webhook outbox, model installs) here.
 * `options.onWebhookOwed` hears of each webhook a job's end wrote, after its commit (to queue it
 * at once; else the reconciler does).
 */
export function createJobTables(prisma: PrismaClient, options: JobTableOptions = {}): MixdownJobTables {
  const jobTables = Object.fromEntries(JOB_TABLE_KINDS.map((kind) => [kind, JOB_TABLE_ROWS[kind].table(prisma, options)]));
  return {
    ...(jobTables as Pick<MixdownJobTables, JobTableKind>),
    "voice-model-media": voiceModelMediaTable(prisma),
    "voice-model-build": voiceModelBuildTable(prisma),
    "webhook-delivery": webhookDeliveryTable(prisma),
    "model-install": modelInstallTable(prisma),
  };
}

/** The table of a queue entry's kind, without the per-kind row types (the reconciler needs none). */
export function tableOf(tables: MixdownJobTables, ref: JobRef): JobTable<unknown, unknown> {
  return tables[ref.queue] as JobTable<unknown, unknown>;
}
