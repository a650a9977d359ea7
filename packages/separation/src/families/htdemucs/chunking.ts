/** demucs.apply.apply_model's default overlap (and the demucs CLI's). */
export const HTDEMUCS_DEFAULT_OVERLAP = 0.25;

/**
 * apply_model(split=True)'s geometry for one model over a song of `total` samples: chunks of
 * the model's segment start every `stride = int((1 − overlap)·segment)` samples from 0 while
 * they start inside the song.
 */
export class ChunkPlan {
  readonly segment: number;
  readonly stride: number;
  readonly total: number;
  readonly count: number;
  /** the triangular transition weight, (w / max w)^1 in float32 as torch computes it */
  readonly weight: Float32Array;

  constructor(segment: number, overlap: number, total: number) {
    if (!(overlap >= 0 && overlap < 1)) throw new RangeError(`overlap must be in [0, 1), got ${overlap}`);
    this.segment = segment;
    this.stride = Math.trunc((1 - overlap) * segment);
    if (this.stride < 1) throw new RangeError(`overlap ${overlap} leaves no stride for a segment of ${segment} samples`);
    this.total = total;
    this.count = total > 0 ? Math.ceil(total / this.stride) : 0;
    const half = Math.floor(segment / 2);
    const max = segment - half;
    this.weight = new Float32Array(segment);
    for (let i = 0; i < segment; i++) this.weight[i] = (i < half ? i + 1 : segment - i) / max;
  }

  offset(k: number): number {
    return k * this.stride;
  }

  /** samples of the song chunk k covers, and so writes to: TensorChunk's length */
  length(k: number): number {
    return Math.min(this.total - this.offset(k), this.segment);
  }

  /**
   * Where chunk k's model input starts in the song: TensorChunk.padded centres a short last
   * chunk in its segment, reaching back before its offset (zeros only outside the song).
   */
  inputStart(k: number): number {
    const delta = this.segment - this.length(k);
    return this.offset(k) - Math.floor(delta / 2);
  }

  /** the input sample past the last one chunk k reads (the song's end at most) */
  inputEnd(k: number): number {
    return Math.min(this.inputStart(k) + this.segment, this.total);
  }

  /** where chunk k's output starts within the model's output (center_trim) */
  trim(k: number): number {
    return Math.floor((this.segment - this.length(k)) / 2);
  }
}
