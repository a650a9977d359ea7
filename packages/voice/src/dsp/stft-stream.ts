import { ComplexFft } from "@mixdown/separation/fft";
import { hann } from "./window.ts";

/** A batch of consecutive STFT frames, bins [0, nFft/2] of each frame, frame-major. */
export interface StftBatch {
  count: number;
  bins: number;
  re: Float32Array;
  im: Float32Array;
}

export interface StftStreamOptions {
  nFft: number;
  hop: number;
  /** Frames handed to `process` at once (the last batch may be smaller). */
  batchFrames?: number;
  /** Changes the batch's spectra in place; they are then resynthesised. */
  process: (batch: StftBatch) => void | Promise<void>;
  /** false: analysis only, nothing is yielded. */
  synthesize?: boolean;
}

/**
 * Streams a mono signal through STFT -> `process` -> inverse STFT with overlap-add (Hann
 * analysis and synthesis windows, hop nFft/4), yielding output blocks of exactly the input's total
 * length. Memory is bounded by one batch whatever the input's length.
 */
export async function* streamStft(blocks: AsyncIterable<Float32Array>, options: StftStreamOptions): AsyncGenerator<Float32Array> {
  const { nFft, hop } = options;
  const batchFrames = options.batchFrames ?? 256;
  const synthesize = options.synthesize ?? true;
  const bins = nFft / 2 + 1;
  const window = hann(nFft);
  let wsum = 0;
  for (let k = 0; k < nFft; k += hop) wsum += window[k]! * window[k]!;
  // Periodic Hann at 75 % overlap: the squared windows sum to the same constant at every sample.
  const norm = 1 / wsum;
  const fft = new ComplexFft(nFft);
  const frameRe = new Float64Array(nFft);
  const frameIm = new Float64Array(nFft);
  const lead = nFft - hop;

  const span = nFft + (batchFrames - 1) * hop;
  let pending = new Float32Array(span * 2);
  let pendingLen = lead; // left padding: every real sample is covered by a full set of frames
  let ola = new Float32Array(span + batchFrames * hop);
  let inputLen = 0;
  let toSkip = lead;
  const re = new Float32Array(batchFrames * bins);
  const im = new Float32Array(batchFrames * bins);

  let framesProcessed = 0;
  const runBatch = async (count: number): Promise<Float32Array | undefined> => {
    framesProcessed += count;
    for (let f = 0; f < count; f++) {
      const off = f * hop;
      for (let i = 0; i < nFft; i++) {
        frameRe[i] = pending[off + i]! * window[i]!;
        frameIm[i] = 0;
      }
      fft.forward(frameRe, frameIm);
      for (let k = 0; k < bins; k++) {
        re[f * bins + k] = frameRe[k]!;
        im[f * bins + k] = frameIm[k]!;
      }
    }
    await options.process({ count, bins, re: re.subarray(0, count * bins), im: im.subarray(0, count * bins) });
    const consumed = count * hop;
    pending.copyWithin(0, consumed, pendingLen);
    pendingLen -= consumed;
    if (!synthesize) return undefined;
    for (let f = 0; f < count; f++) {
      for (let k = 0; k < bins; k++) {
        frameRe[k] = re[f * bins + k]!;
        frameIm[k] = im[f * bins + k]!;
      }
      frameIm[0] = 0;
      frameIm[bins - 1] = 0;
      for (let k = bins; k < nFft; k++) {
        frameRe[k] = frameRe[nFft - k]!;
        frameIm[k] = -frameIm[nFft - k]!;
      }
      fft.inverse(frameRe, frameIm);
      const off = f * hop;
      for (let i = 0; i < nFft; i++) ola[off + i] = ola[off + i]! + frameRe[i]! * window[i]! * norm;
    }
    const out = ola.slice(0, consumed);
    ola.copyWithin(0, consumed);
    ola.fill(0, ola.length - consumed);
    return out;
  };

  let emitted = 0;
  const emit = (out: Float32Array | undefined, limit: number): Float32Array | undefined => {
    if (!out) return undefined;
    let start = 0;
    if (toSkip > 0) {
      start = Math.min(toSkip, out.length);
      toSkip -= start;
    }
    const end = Math.min(out.length, start + (limit - emitted));
    if (end <= start) return undefined;
    emitted += end - start;
    return out.subarray(start, end);
  };

  const append = (block: Float32Array) => {
    if (pendingLen + block.length > pending.length) {
      const grown = new Float32Array(Math.max(pending.length * 2, pendingLen + block.length));
      grown.set(pending.subarray(0, pendingLen));
      pending = grown;
    }
    pending.set(block, pendingLen);
    pendingLen += block.length;
  };

  for await (const block of blocks) {
    inputLen += block.length;
    let offset = 0;
    // Feed in slices so `pending` stays around one batch long.
    while (offset < block.length) {
      const take = Math.min(block.length - offset, span);
      append(block.subarray(offset, offset + take));
      offset += take;
      while (pendingLen >= span) {
        const out = emit(await runBatch(batchFrames), Number.POSITIVE_INFINITY);
        if (out) yield out;
      }
    }
  }
  const totalFrames = Math.floor((lead + inputLen - 1) / hop) + 1;
  append(new Float32Array(span + nFft));
  while (framesProcessed < totalFrames && inputLen > 0) {
    const out = emit(await runBatch(Math.min(batchFrames, totalFrames - framesProcessed)), inputLen);
    if (out) yield out;
  }
  if (synthesize && emitted < inputLen) yield new Float32Array(inputLen - emitted);
}
