import type { SeparatedBlock, SeparationTimings } from "../family.ts";

/**
 * MSST's `demix` (utils/model_utils.py, generic mode, at ccc011a), streamed:
 *
 * - `step = chunkSize // numOverlap`, `border = chunkSize − step`, `fade = chunkSize // 10`;
 * - a song longer than `2·border` is reflect-padded by `border` at both ends (shorter: not at all);
 * - chunk `k` starts at `k·step` (padded coordinates) while that is inside the padded song; a
 *   chunk running past the end is padded to `chunkSize` by reflection when more than half of it
 *   is audio, with zeros otherwise;
 * - chunks go to the model `batchSize` at a time, and the batch decides the fades: every chunk is
 *   weighted by a window that is 1 but for linear fades over its first and last `fade` samples;
 *   a batch whose last chunk is chunk 0 loses its fade-in, otherwise the song's last batch loses
 *   its fade-out (every chunk of it);
 * - the weighted outputs are summed, divided by the summed weights (0/0 → 0), and the padding cut.
 *
 * Which batch is the song's last is only known near its end, so a batch's outputs are added once
 * the input reaches past the batch (or ends); memory holds about one batch span, whatever the length.
 */
export interface MsstDemixGeometry {
  chunkSize: number;
  numOverlap: number;
  /** MSST's batch: decides the fades */
  batchSize: number;
}

export function msstSteps({ chunkSize, numOverlap }: MsstDemixGeometry) {
  const step = Math.floor(chunkSize / numOverlap);
  return { step, border: chunkSize - step, fade: Math.floor(chunkSize / 10) };
}

/** torch.linspace(start, end, steps) in float32, computed as torch's CPU kernel does (from both ends). */
function linspace(start: number, end: number, steps: number): Float32Array {
  const out = new Float32Array(steps);
  if (steps === 1) {
    out[0] = start;
    return out;
  }
  const step = Math.fround((end - start) / (steps - 1));
  const half = Math.floor(steps / 2);
  for (let i = 0; i < steps; i++) out[i] = i < half ? start + step * i : end - step * (steps - i - 1);
  return out;
}

/** MSST's _getWindowingArray with the batch's fade rule applied. */
export function msstWindow(chunkSize: number, fade: number, keepFadeIn: boolean, keepFadeOut: boolean): Float32Array {
  const w = new Float32Array(chunkSize).fill(1);
  if (keepFadeOut) w.set(linspace(1, 0, fade), chunkSize - fade);
  if (keepFadeIn) w.set(linspace(0, 1, fade), 0);
  return w;
}

/**
 * Runs chunks through the model: `chunks[i]` is one chunk, planar stereo (`chunkSize` left samples
 * then `chunkSize` right); each result is planar too, stem after stem ([stems][2][chunkSize]).
 */
export type MsstChunkRunner = (chunks: Float32Array[], timings: SeparationTimings) => Promise<Float32Array[]>;

export interface MsstDemixOptions {
  geometry: MsstDemixGeometry;
  /** chunks per model call (any grouping gives the same result; MSST's batch only sets the fades) */
  runBatch: number;
  /** the model's stems, in output order */
  stems: readonly string[];
  /** mixture − one of the model's stems */
  derived?: { name: string; from: string };
  /** stems to yield */
  wanted: readonly string[];
  timings: SeparationTimings;
  signal?: AbortSignal;
}

/** A growable planar stereo buffer addressed by absolute sample position. */
class Window2 {
  start = 0;
  end = 0;
  left = new Float32Array(0);
  right = new Float32Array(0);

  reserve(end: number) {
    const need = end - this.start;
    if (need <= this.left.length) return;
    const size = Math.max(need, 2 * this.left.length, 1024);
    for (const side of ["left", "right"] as const) {
      const grown = new Float32Array(size);
      grown.set(this[side].subarray(0, this.end - this.start));
      this[side] = grown;
    }
  }

  /** forgets everything before `position` */
  drop(position: number) {
    const cut = Math.min(position, this.end) - this.start;
    if (cut <= 0) return;
    const used = this.end - this.start;
    this.left.copyWithin(0, cut, used);
    this.right.copyWithin(0, cut, used);
    // accumulators add onto what lies past `end`, so it must read as zeros
    this.left.fill(0, used - cut, used);
    this.right.fill(0, used - cut, used);
    this.start += cut;
  }
}

export async function* msstDemixStream(
  input: AsyncIterable<Float32Array>,
  run: MsstChunkRunner,
  options: MsstDemixOptions,
): AsyncGenerator<SeparatedBlock, void, undefined> {
  const { geometry, stems, derived, wanted, timings, signal } = options;
  const { chunkSize, batchSize } = geometry;
  const { step, border, fade } = msstSteps(geometry);
  const stemCount = stems.length;
  const derivedFrom = derived ? stems.indexOf(derived.from) : -1;

  // the mixture in padded coordinates (after the decision below, `offset` = border or 0)
  const mix = new Window2();
  let received = 0;
  let offset: number | undefined;
  let ended = false;
  /** padded length, once the input has ended */
  let paddedLength = 0;

  const acc = Array.from({ length: stemCount }, () => new Window2());
  const weight = new Window2();
  let nextChunk = 0;
  let emitted = 0; // padded coordinates

  const append = (block: Float32Array) => {
    const frames = block.length >> 1;
    const at = mix.end;
    mix.reserve(at + frames);
    const base = at - mix.start;
    for (let i = 0; i < frames; i++) {
      mix.left[base + i] = block[2 * i];
      mix.right[base + i] = block[2 * i + 1];
    }
    mix.end += frames;
    received += frames;
  };

  /** once the song is known to be longer than 2·border (or has ended), MSST's start padding */
  const decidePadding = () => {
    if (offset !== undefined) return;
    if (!ended && received <= 2 * border) return;
    offset = received > 2 * border && border > 0 ? border : 0;
    if (offset === 0) return;
    const used = mix.end - mix.start;
    const left = new Float32Array(Math.max(2 * (used + offset), 1024));
    const right = new Float32Array(left.length);
    left.set(mix.left.subarray(0, used), offset);
    right.set(mix.right.subarray(0, used), offset);
    for (let p = 0; p < offset; p++) {
      left[p] = mix.left[offset - p];
      right[p] = mix.right[offset - p];
    }
    mix.left = left;
    mix.right = right;
    mix.end += offset;
  };

  const finishInput = () => {
    ended = true;
    decidePadding();
    const pad = offset!;
    const length = received;
    if (pad > 0) {
      // torch reflect padding on the right: x[L−2], x[L−3], …
      mix.reserve(mix.end + pad);
      for (let j = 0; j < pad; j++) {
        const src = pad + length - 2 - j - mix.start;
        mix.left[mix.end - mix.start + j] = mix.left[src];
        mix.right[mix.end - mix.start + j] = mix.right[src];
      }
      mix.end += pad;
    }
    paddedLength = length + 2 * pad;
  };

  const chunkCount = () => Math.ceil(paddedLength / step);

  /** whether the batch starting at chunk `first` can be run and added now */
  const batchReady = (first: number): boolean => {
    if (offset === undefined) return false;
    if (ended) return first < chunkCount();
    const last = first + batchSize - 1;
    return mix.end >= Math.max(last * step + chunkSize, (last + 1) * step + 1);
  };

  const chunkInput = (k: number): { data: Float32Array; length: number } => {
    const start = k * step;
    const length = Math.min(chunkSize, (ended ? paddedLength : mix.end) - start);
    const data = new Float32Array(2 * chunkSize);
    const from = start - mix.start;
    data.set(mix.left.subarray(from, from + length), 0);
    data.set(mix.right.subarray(from, from + length), chunkSize);
    if (length < chunkSize && length > Math.floor(chunkSize / 2)) {
      for (let j = length; j < chunkSize; j++) {
        data[j] = data[2 * (length - 1) - j];
        data[chunkSize + j] = data[chunkSize + 2 * (length - 1) - j];
      }
    }
    return { data, length };
  };

  const processBatch = async (first: number) => {
    const last = ended ? Math.min(first + batchSize, chunkCount()) - 1 : first + batchSize - 1;
    const isLastBatch = ended && last === chunkCount() - 1;
    const keepFadeIn = last !== 0;
    const keepFadeOut = !(keepFadeIn && isLastBatch);
    const window = msstWindow(chunkSize, fade, keepFadeIn, keepFadeOut);
    for (let k = first; k <= last; k += options.runBatch) {
      signal?.throwIfAborted();
      const inputs: { data: Float32Array; length: number }[] = [];
      for (let i = k; i <= Math.min(last, k + options.runBatch - 1); i++) inputs.push(chunkInput(i));
      const outputs = await run(
        inputs.map((c) => c.data),
        timings,
      );
      const t0 = performance.now();
      for (let c = 0; c < inputs.length; c++) {
        const start = (k + c) * step;
        const length = inputs[c].length;
        const out = outputs[c];
        for (const w of [weight, ...acc]) w.reserve(start + length);
        for (let s = 0; s < stemCount; s++) {
          const a = acc[s];
          const base = start - a.start;
          const l = out.subarray(2 * s * chunkSize, (2 * s + 1) * chunkSize);
          const r = out.subarray((2 * s + 1) * chunkSize, (2 * s + 2) * chunkSize);
          for (let j = 0; j < length; j++) {
            a.left[base + j] += l[j] * window[j];
            a.right[base + j] += r[j] * window[j];
          }
          a.end = Math.max(a.end, start + length);
        }
        const wb = start - weight.start;
        for (let j = 0; j < length; j++) weight.left[wb + j] += window[j];
        weight.end = Math.max(weight.end, start + length);
      }
      timings.postMs += performance.now() - t0;
      timings.chunks += inputs.length;
      timings.batches += 1;
    }
    nextChunk = last + 1;
  };

  /** yields what no later chunk can change: up to the next chunk's start, inside the padding cut */
  function* emit(): Generator<SeparatedBlock> {
    const pad = offset!;
    const cut = ended ? paddedLength - pad : mix.end;
    const validEnd = ended && nextChunk >= chunkCount() ? cut : Math.min(nextChunk * step, cut);
    const from = Math.max(emitted, pad);
    if (validEnd <= from) return;
    const t0 = performance.now();
    const frames = validEnd - from;
    const out: Record<string, Float32Array> = {};
    const estimates: Float32Array[] = [];
    for (let s = 0; s < stemCount; s++) {
      const a = acc[s];
      const e = new Float32Array(2 * frames);
      for (let i = 0; i < frames; i++) {
        const p = from + i - a.start;
        const wsum = weight.left[from + i - weight.start];
        // MSST: result / counter, then nan_to_num (0/0 where every weight was 0)
        e[2 * i] = wsum === 0 ? 0 : a.left[p] / wsum;
        e[2 * i + 1] = wsum === 0 ? 0 : a.right[p] / wsum;
      }
      estimates.push(e);
      if (wanted.includes(stems[s])) out[stems[s]] = e;
    }
    if (derived && wanted.includes(derived.name)) {
      const src = estimates[derivedFrom];
      const d = new Float32Array(2 * frames);
      for (let i = 0; i < frames; i++) {
        const p = from + i - mix.start;
        d[2 * i] = mix.left[p] - src[2 * i];
        d[2 * i + 1] = mix.right[p] - src[2 * i + 1];
      }
      out[derived.name] = d;
    }
    emitted = validEnd;
    // keep what later chunks read (and the samples the end padding reflects)
    mix.drop(Math.max(0, Math.min(nextChunk * step, emitted) - border - 1));
    for (const w of [weight, ...acc]) w.drop(emitted);
    timings.postMs += performance.now() - t0;
    yield { frames, stems: out };
  }

  for await (const block of input) {
    signal?.throwIfAborted();
    append(block);
    decidePadding();
    while (batchReady(nextChunk)) {
      await processBatch(nextChunk);
      yield* emit();
    }
  }
  signal?.throwIfAborted();
  if (received === 0) return;
  finishInput();
  while (batchReady(nextChunk)) {
    await processBatch(nextChunk);
    yield* emit();
  }
  yield* emit();
}
