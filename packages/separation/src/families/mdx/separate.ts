import { BACKING_STEM } from "../../manifest.ts";
import type { FamilyStreamOptions, SeparatedBlock } from "../family.ts";
import { MDX_DEFAULT_OVERLAP, mdxChunkCount, mdxChunking } from "./chunking.ts";
import { HelperThreadStft, sharedFloat32 } from "./helper-thread-stft.ts";
import type { MdxModel } from "./model.ts";
import { releaseNow } from "../../release-now.ts";

/**
 * Separates a stream of interleaved stereo blocks at the model's rate into
 * stems, with the MDX-Net chunking (chunking.ts): each chunk is analysed
 * (stft.ts), run through the model, resynthesised with nFft/2 trimmed at each
 * side, weighted and overlap-added, normalised by the summed weights. Stems
 * are yielded as soon as no later chunk can touch them, so memory is bounded
 * by a few chunks whatever the input length; the yielded frames add up to
 * exactly the input's.
 */
export async function* separateMdxStream(
  input: AsyncIterable<Float32Array>,
  model: MdxModel,
  options: FamilyStreamOptions,
): AsyncGenerator<SeparatedBlock, void, undefined> {
  const manifest = model.manifest;
  const stfts = await HelperThreadStft.create(manifest, {
    fft: options.fft,
    ...(options.helperThread !== undefined ? { helperThread: options.helperThread } : {}),
  });
  const { specSize } = stfts.stft;
  const chunking = mdxChunking(stfts.stft, options.overlap ?? MDX_DEFAULT_OVERLAP);
  const { chunkSize, trim, kept, step, weights } = chunking;
  const batchSize = Math.min(options.batchSize, model.maxBatch);
  const wanted = new Set(options.stems);
  const modelStems = manifest.stems.length;
  const { compensate } = manifest;
  const { signal, timings } = options;

  // Input in padded coordinates: padded p = mixture p − trim; the first `trim` are zeros.
  // shared memory, so the STFT helper thread reads the same samples
  let inLeft = sharedFloat32(chunkSize + batchSize * step);
  let inRight = sharedFloat32(inLeft.length);
  let inStart = 0;
  let inEnd = trim;

  // Accumulators in mixture coordinates from `outStart` (everything before is emitted).
  const accCapacity = kept + batchSize * step;
  const acc = Array.from({ length: 2 * modelStems }, () => new Float32Array(accCapacity));
  const weightSum = new Float32Array(accCapacity);
  let outStart = 0;
  let accEnd = 0;

  /** chunks whose spectrogram is computed / whose output is overlap-added */
  let analyzed = 0;
  let synthesized = 0;
  let mixtureFrames = 0;

  const ensureInput = (extra: number) => {
    const used = inEnd - inStart;
    if (used + extra <= inLeft.length) return;
    const size = Math.max(used + extra, 2 * inLeft.length);
    const left = sharedFloat32(size);
    const right = sharedFloat32(size);
    left.set(inLeft.subarray(0, used));
    right.set(inRight.subarray(0, used));
    inLeft = left;
    inRight = right;
  };

  const append = (block: Float32Array) => {
    const frames = block.length >> 1;
    ensureInput(frames);
    const at = inEnd - inStart;
    for (let i = 0; i < frames; i++) {
      inLeft[at + i] = block[2 * i];
      inRight[at + i] = block[2 * i + 1];
    }
    inEnd += frames;
    mixtureFrames += frames;
  };

  // Two input spectrogram buffers: the next batch is analysed into one while
  // onnxruntime still reads the other.
  const specBuffers = [sharedFloat32(batchSize * specSize), sharedFloat32(batchSize * specSize)];
  let flip = 0;

  /** STFT of chunks [analyzed, analyzed + count) into a free buffer. */
  const analyzeBatch = async (count: number): Promise<Float32Array> => {
    const t0 = performance.now();
    const full = specBuffers[flip];
    flip ^= 1;
    const batchSpec = count === batchSize ? full : full.subarray(0, count * specSize);
    for (let b = 0; b < count; b++) {
      await stfts.analyze(inLeft, inRight, (analyzed + b) * step - inStart, batchSpec, b * specSize);
    }
    analyzed += count;
    timings.postMs += performance.now() - t0;
    return batchSpec;
  };

  interface InFlight {
    count: number;
    result: Promise<{ data: Float32Array }>;
  }

  const startRun = (batchSpec: Float32Array, count: number): InFlight => {
    const started = performance.now();
    const result = model.run(batchSpec, count).then((out) => {
      timings.inferenceMs += performance.now() - started;
      return out;
    });
    result.catch(() => {}); // awaited (and rethrown) by the loop
    return { count, result };
  };

  /** iSTFT of a finished run's chunks into the accumulators. */
  const synthesizeBatch = async (data: Float32Array, count: number): Promise<void> => {
    const t0 = performance.now();
    for (let b = 0; b < count; b++) {
      const base = (synthesized + b) * step - outStart;
      for (let s = 0; s < modelStems; s++) {
        await stfts.synthesizeAdd(data, (b * modelStems + s) * specSize, acc[2 * s], acc[2 * s + 1], base, weights);
      }
      for (let i = 0; i < kept; i++) weightSum[base + i] += weights[i];
    }
    synthesized += count;
    accEnd = (synthesized - 1) * step + kept;
    timings.chunks += count;
    timings.batches += 1;
    timings.postMs += performance.now() - t0;
  };

  /** Stems for mixture frames [outStart, to), then drops what is no longer needed. */
  const emit = (to: number): SeparatedBlock | undefined => {
    const frames = to - outStart;
    if (frames <= 0) return undefined;
    const t0 = performance.now();
    const stems: Record<string, Float32Array> = {};
    const modelOutputs: Float32Array[] = [];
    for (let s = 0; s < modelStems; s++) {
      const accLeft = acc[2 * s];
      const accRight = acc[2 * s + 1];
      const out = new Float32Array(2 * frames);
      for (let i = 0; i < frames; i++) {
        const scale = compensate / weightSum[i];
        out[2 * i] = accLeft[i] * scale;
        out[2 * i + 1] = accRight[i] * scale;
      }
      modelOutputs.push(out);
      if (wanted.has(manifest.stems[s])) stems[manifest.stems[s]] = out;
    }
    // single-stem: secondary = mixture − primary; multi-stem: backing = mixture − vocals
    const derivedName = modelStems === 1 ? manifest.secondaryStem! : BACKING_STEM;
    const subtrahend = modelStems === 1 ? modelOutputs[0] : modelOutputs[manifest.stems.indexOf("vocals")];
    if (wanted.has(derivedName) && subtrahend && !manifest.stems.includes(derivedName)) {
      const out = new Float32Array(2 * frames);
      const mixAt = outStart + trim - inStart;
      for (let i = 0; i < frames; i++) {
        out[2 * i] = inLeft[mixAt + i] - subtrahend[2 * i];
        out[2 * i + 1] = inRight[mixAt + i] - subtrahend[2 * i + 1];
      }
      stems[derivedName] = out;
    }

    const live = accEnd - outStart;
    for (const a of [...acc, weightSum]) {
      a.copyWithin(0, frames, Math.max(frames, live));
      a.fill(0, Math.max(0, live - frames), Math.max(frames, live));
    }
    outStart = to;
    const keepFrom = Math.min(analyzed * step, outStart + trim);
    if (keepFrom > inStart) {
      inLeft.copyWithin(0, keepFrom - inStart, inEnd - inStart);
      inRight.copyWithin(0, keepFrom - inStart, inEnd - inStart);
      inStart = keepFrom;
    }
    timings.postMs += performance.now() - t0;
    return { frames, stems };
  };

  // The loop keeps onnxruntime busy: batch k+1 is analysed while batch k runs,
  // and batch k is resynthesised, emitted and encoded while batch k+1 runs.
  const source = input[Symbol.asyncIterator]();
  let chunks: number | undefined; // known once the input has ended
  /** Reads input until `frames` padded frames are there or the input ends. */
  const fill = async (frames: number) => {
    while (chunks === undefined && inEnd < frames) {
      signal?.throwIfAborted();
      const next = await source.next();
      if (!next.done) {
        append(next.value);
        continue;
      }
      const total = mixtureFrames;
      chunks = mdxChunkCount(total, chunking);
      const paddedEnd = (chunks - 1) * step + chunkSize;
      if (chunks > 0 && paddedEnd > inEnd) {
        ensureInput(paddedEnd - inEnd);
        inLeft.fill(0, inEnd - inStart, paddedEnd - inStart);
        inRight.fill(0, inEnd - inStart, paddedEnd - inStart);
        inEnd = paddedEnd;
      }
    }
  };

  let inFlight: InFlight | undefined;
  try {
    while (true) {
      await fill((analyzed + batchSize - 1) * step + chunkSize);
      const ready = chunks === undefined ? batchSize : Math.min(batchSize, chunks - analyzed);
      const nextSpec = ready > 0 ? await analyzeBatch(ready) : undefined;
      const previous = inFlight;
      let finished: Float32Array | undefined;
      if (previous) {
        const t0 = performance.now();
        finished = (await previous.result).data;
        timings.waitMs += performance.now() - t0;
      }
      inFlight = nextSpec ? startRun(nextSpec, ready) : undefined;
      if (previous && finished) {
        await synthesizeBatch(finished, previous.count);
        // the run's output (4 MB a chunk and stem for the default models) is read no more: freed
        // now, not at the GC that this thread's garbage buffers would trigger 64 MB later
        releaseNow(finished);
        const out = emit(chunks !== undefined && synthesized === chunks ? mixtureFrames : synthesized * step);
        if (out) yield out;
      }
      if (!inFlight) break;
      signal?.throwIfAborted();
    }
  } finally {
    // an abandoned run must not outlive the stream unobserved
    if (inFlight) await inFlight.result.catch(() => {});
  }
  const total = mixtureFrames;
  if (total === 0) return;
  const rest = emit(total);
  if (rest) yield rest;
}
