import { JOB_KINDS, type JobKind } from "@mixdown/jobs";
import { audioAnalysisKind } from "./audio-analysis/handler.ts";
import type { WorkerKind } from "./context.ts";
import { harmonyKind } from "./harmony/handler.ts";
import { masteringKind } from "./mastering/handler.ts";
import { modelInstallKind } from "./model-install/handler.ts";
import { pipelineKind } from "./pipeline/handler.ts";
import { separationKind } from "./separation/handler.ts";
import { ttsKind } from "./tts/handler.ts";
import { vocalRepairKind } from "./vocal-repair/handler.ts";
import { voiceBlendKind } from "./voice-blend/handler.ts";
import { voiceConversionKind } from "./voice-conversion/handler.ts";
import { voiceModelBuildKind } from "./voice-model-build/handler.ts";
import { voiceModelMediaKind } from "./voice-model-media/handler.ts";
import { webhookDeliveryKind } from "./webhook-delivery/handler.ts";

/** One `WorkerKind` per kind of the catalogue (a test holds a map missing one to a compile error). */
export type WorkerKinds = { [K in JobKind]: WorkerKind<K> };

/**
 * How this worker runs each job kind of the catalogue, one line each (the kind's folder beside
 * this file holds the rest). Keyed by `JobKind`: a kind added to the catalogue does not compile
 * until it has a line here, and `checkWorkerKinds` refuses to start without one.
 */
export const WORKER_KINDS: WorkerKinds = {
  separation: separationKind,
  "voice-conversion": voiceConversionKind,
  "voice-blend": voiceBlendKind,
  tts: ttsKind,
  "audio-analysis": audioAnalysisKind,
  "vocal-repair": vocalRepairKind,
  mastering: masteringKind,
  harmony: harmonyKind,
  pipeline: pipelineKind,
  "voice-model-media": voiceModelMediaKind,
  "voice-model-build": voiceModelBuildKind,
  "webhook-delivery": webhookDeliveryKind,
  "model-install": modelInstallKind,
};

/**
 * The kinds of the catalogue that `kinds` has no worker for: the compiler catches a missing line
 * in `WORKER_KINDS`, this catches what a cast or a stale build slips past, at start.
 */
export function checkWorkerKinds(
  kinds: Partial<Record<string, WorkerKind<JobKind>>>,
  catalogue: readonly string[] = JOB_KINDS,
): void {
  const missing = catalogue.filter((kind) => typeof kinds[kind]?.start !== "function");
  if (missing.length > 0)
    throw new Error(
      `the worker has no handler for the job kinds ${missing.join(", ")} of the catalogue (apps/worker/src/kinds/index.ts)`,
    );
}
