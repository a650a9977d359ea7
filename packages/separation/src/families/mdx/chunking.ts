/** Share of each chunk's kept part that the next chunk overlaps (python-audio-separator's default). */
export const MDX_DEFAULT_OVERLAP = 0.25;

/**
 * Where MDX-Net chunks fall, as UVR / python-audio-separator cut them: the
 * mixture is padded with `trim` (nFft/2) zeros in front, a chunk of
 * `chunkSize` padded samples starts every `step`, and of its output only the
 * `kept` samples after `trim` are overlap-added, weighted by `weights`. A
 * chunk's kept part therefore starts at `k·step` in mixture coordinates.
 */
export interface MdxChunking {
  chunkSize: number;
  trim: number;
  kept: number;
  step: number;
  /** sin² over the kept part, never exactly zero so a lone chunk divides cleanly */
  weights: Float32Array;
}

export function mdxChunking(geometry: { chunkSize: number; trim: number; keptSize: number }, overlap: number): MdxChunking {
  const { chunkSize, trim, keptSize: kept } = geometry;
  const weights = new Float32Array(kept);
  for (let i = 0; i < kept; i++) weights[i] = Math.sin((Math.PI * (i + 1)) / (kept + 1)) ** 2;
  return { chunkSize, trim, kept, step: Math.max(1, Math.floor(kept * (1 - overlap))), weights };
}

/** Chunks whose kept parts cover `frames` mixture frames. */
export function mdxChunkCount(frames: number, { kept, step }: MdxChunking): number {
  return frames === 0 ? 0 : frames <= kept ? 1 : Math.ceil((frames - kept) / step) + 1;
}
