import type { JobTableKind } from "@mixdown/jobs";
import { audioAnalysisApi } from "./audio-analysis/routes.ts";
import type { ApiKind } from "./context.ts";
import { harmonyApi } from "./harmony/routes.ts";
import { masteringApi } from "./mastering/routes.ts";
import { pipelineApi } from "./pipeline/routes.ts";
import { separationApi } from "./separation/routes.ts";
import { ttsApi } from "./tts/routes.ts";
import { vocalRepairApi } from "./vocal-repair/routes.ts";
import { voiceBlendApi } from "./voice-blend/routes.ts";
import { voiceConversionApi } from "./voice-conversion/routes.ts";

/** One `ApiKind` per job table kind (a test holds a map missing one to a compile error). */
// Each entry pairs its own service type with its routes; the map only needs that pairing.
export type ApiKinds = { [K in JobTableKind]: ApiKind<any> };

/**
 * The job kinds callers create, list, fetch and cancel, one line each (the kind's folder beside
 * this file holds its routes and service). Keyed by the catalogue's `JobTableKind`: a kind added
 * there does not compile until it has a line here. `buildApp` registers them in this order.
 */
export const API_KINDS: ApiKinds = {
  separation: separationApi,
  "voice-conversion": voiceConversionApi,
  "voice-blend": voiceBlendApi,
  tts: ttsApi,
  "audio-analysis": audioAnalysisApi,
  "vocal-repair": vocalRepairApi,
  mastering: masteringApi,
  harmony: harmonyApi,
  pipeline: pipelineApi,
};
