/** The queues Mixdown's API fills and its worker drains. */
export const QueueName = {
  separation: "separation",
  voiceConversion: "voice-conversion",
  voiceBlend: "voice-blend",
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

export interface PayloadByQueue {
  separation: SeparationPayload;
  "voice-conversion": VoiceConversionPayload;
  "voice-blend": VoiceBlendPayload;
}

/** A queue entry to be: one member per queue (a discriminated union on `queue`). */
export type JobRef =
  | { queue: "separation"; payload: SeparationPayload }
  | { queue: "voice-conversion"; payload: VoiceConversionPayload }
  | { queue: "voice-blend"; payload: VoiceBlendPayload };

/**
 * The BullMQ job id of a row: derived from the row id so that adding the same row twice is a
 * no-op (`separation-12`, `voice-conversion-3`, `voice-blend-7`).
 */
export function bullJobId(queue: QueueName, rowId: number): string {
  return `${queue}-${rowId}`;
}

/** The BullMQ job name: the separation kind, or the queue name. */
export function bullJobName(ref: JobRef): string {
  return ref.queue === "separation" ? ref.payload.kind : ref.queue;
}
