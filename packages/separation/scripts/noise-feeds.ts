import type { RunnableSession, SessionFeed } from "../src/inference-session.ts";

/** Noise in a session's own input shapes, symbolic dimensions (the batch) set to 1: one chunk, for timing a run. */
export function noiseFeeds(session: RunnableSession, file: string): Record<string, SessionFeed> {
  const feeds: Record<string, SessionFeed> = {};
  for (const meta of session.inputMetadata) {
    if (!meta.isTensor) throw new Error(`${file}: input ${meta.name} is not a tensor`);
    const dims = meta.shape.map((d) => (typeof d === "number" && d > 0 ? d : 1));
    const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = (Math.random() - 0.5) * 0.2;
    feeds[meta.name] = { data, dims };
  }
  return feeds;
}
