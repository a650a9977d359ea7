/** The queues Mixdown's API fills and its worker drains. */
export const QueueName = {
  separation: "separation",
  voiceConversion: "voice-conversion",
  voiceBlend: "voice-blend",
  voiceModelMedia: "voice-model-media",
} as const;
export type QueueName = (typeof QueueName)[keyof typeof QueueName];
export const QUEUE_NAMES: readonly QueueName[] = Object.values(QueueName);

export type SeparationKind = "vocal-separation" | "stem-split";

/** What each queue's entries carry: only the row id (and the separation kind); the row holds the rest. */
export interface SeparationPayload {
  kind: SeparationKind;
  jobId: number;
}
export interface VoiceConversionPayload {
  jobId: number;
}
export interface VoiceBlendPayload {
  jobId: number;
}
/** Renders a voice model's demo clip and cover image; the VoiceModel row is the record. */
export interface VoiceModelMediaPayload {
  voiceModelId: number;
}

export interface PayloadByQueue {
  separation: SeparationPayload;
  "voice-conversion": VoiceConversionPayload;
  "voice-blend": VoiceBlendPayload;
  "voice-model-media": VoiceModelMediaPayload;
}

/** A queue entry to be: one member per queue (a discriminated union on `queue`). */
export type JobRef =
  | { queue: "separation"; payload: SeparationPayload }
  | { queue: "voice-conversion"; payload: VoiceConversionPayload }
  | { queue: "voice-blend"; payload: VoiceBlendPayload }
  | { queue: "voice-model-media"; payload: VoiceModelMediaPayload };

/** The id of the row a queue entry works on: a job row, or the voice model for media. */
export function rowIdOf(ref: JobRef): number {
  return ref.queue === "voice-model-media" ? ref.payload.voiceModelId : ref.payload.jobId;
}

/**
 * The BullMQ job id of a row: derived from the row id so that adding the same row twice is a
 * no-op (`separation-12`, `voice-conversion-3`, `voice-blend-7`, `voice-model-media-5`).
 */
export function bullJobId(queue: QueueName, rowId: number): string {
  return `${queue}-${rowId}`;
}

/** The BullMQ job name: the separation kind, or the queue name. */
export function bullJobName(ref: JobRef): string {
  return ref.queue === "separation" ? ref.payload.kind : ref.queue;
}
