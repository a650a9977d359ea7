import type { JSX } from "preact";
import type { JobKind, JobOf } from "../api.ts";
import { audioAnalysis } from "./audio-analysis.tsx";
import { harmony } from "./harmony.tsx";
import { mastering } from "./mastering.tsx";
import { pipeline } from "./pipeline.tsx";
import { stemSplit, vocalSeparation } from "./separation.tsx";
import { tts } from "./tts.tsx";
import { vocalRepair } from "./vocal-repair.tsx";
import { voiceBlend } from "./voice-blend.tsx";
import { voiceConversion } from "./voice-conversion.tsx";

/** What the dashboard has for a job kind: its name, its create form and the view of its outputs. */
export interface KindView<K extends JobKind> {
  label: string;
  Form: () => JSX.Element;
  Outputs: (props: { job: JobOf<K> }) => JSX.Element;
  /** What the job page shows at every status, above the outputs (a pipeline's steps as they run). */
  Detail?: (props: { job: JobOf<K> }) => JSX.Element;
}

/**
 * Every job kind the API has, each with its view, in the order the dashboard offers them. Keyed
 * by the document's kinds (api.ts' JobKind): a kind the API gains does not compile until it has one.
 */
export const KINDS: { [K in JobKind]: KindView<K> } = {
  "vocal-separations": vocalSeparation,
  "stem-splits": stemSplit,
  "voice-conversions": voiceConversion,
  tts,
  "voice-blender": voiceBlend,
  "audio-analyses": audioAnalysis,
  "vocal-repairs": vocalRepair,
  masterings: mastering,
  harmonies: harmony,
  pipelines: pipeline,
};

/** Every job kind, in the order the dashboard offers them. */
export const JOB_KINDS = Object.keys(KINDS) as JobKind[];

export function isJobKind(value: string): value is JobKind {
  return Object.hasOwn(KINDS, value);
}
