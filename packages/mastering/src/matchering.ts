import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { ComplexFft } from "@mixdown/separation/fft";
import type { MatcheringConfig } from "./config.ts";
import { MATCHERING_DEFAULTS } from "./config.ts";
import { MagnitudeSpectrumSum, matchingFir } from "./frequency-match.ts";
import { butterworthLowpass, FirstOrderFilter, hyraxShape } from "./limiter.ts";
import { SampleFile } from "./scratch.ts";

/** Why Matchering refuses a pair of inputs (its `ModuleError` codes, in words). */
export class MatcheringInputError extends Error {
  readonly field: "target" | "reference";
  constructor(field: "target" | "reference", message: string) {
    super(message);
    this.name = "MatcheringInputError";
    this.field = field;
  }
}

export interface MatcheringRun {
  /** the stereo result at `config.internalSampleRate`, interleaved float32 blocks, in order */
  write(block: Float32Array): Promise<void>;
  /** a folder for the scratch files (about 28 bytes a frame of the target); removed after */
  scratchDir: string;
  config?: MatcheringConfig;
  signal?: AbortSignal;
  /** 0..1 over the whole run */
  onProgress?: (fraction: number) => void;
}

/** What the analysis found, for a record and for the tests. */
export interface MatcheringSummary {
  targetFrames: number;
  referenceFrames: number;
  /** the reference's peak was below the threshold: it was raised to it, and the result lowered by this at the end */
  finalAmplitudeCoefficient: number;
  rmsCoefficient: number;
  correctionCoefficients: number[];
  limiterApplied: boolean;
}

/** Level statistics of one input, cut into `divisions` pieces of `pieceSize` frames. */
interface LevelAnalysis {
  divisions: number;
  pieceSize: number;
  /** the loudest pieces: RMS of the mid at least the RMS of all pieces' RMS */
  loudest: number[];
  matchRms: number;
  midSpectrum: Float64Array;
  sideSpectrum: Float64Array;
}

const rms = (values: ArrayLike<number>, count = values.length): number => {
  let sum = 0;
  for (let i = 0; i < count; i++) sum += values[i] * values[i];
  return Math.sqrt(sum / count);
};

function pieceLayout(frames: number, config: MatcheringConfig): { divisions: number; pieceSize: number } {
  const divisions = Math.trunc(frames / (config.maxPieceSize * config.internalSampleRate)) + 1;
  return { divisions, pieceSize: Math.trunc(frames / divisions) };
}

function loudestOf(rmses: Float64Array): { loudest: number[]; matchRms: number } {
  const average = rms(rmses);
  const loudest: number[] = [];
  for (let p = 0; p < rmses.length; p++) if (rmses[p] >= average) loudest.push(p);
  return { loudest, matchRms: rms(loudest.map((p) => rmses[p])) };
}

/** Splits interleaved L/R into Matchering's mid ((L+R)/2) and side (mid − R), times `gain`. */
function midSide(frames: Float64Array, gain: number): { mid: Float64Array; side: Float64Array } {
  const count = frames.length / 2;
  const mid = new Float64Array(count);
  const side = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const m = (frames[2 * i] + frames[2 * i + 1]) * 0.5;
    mid[i] = m * gain;
    side[i] = (m - frames[2 * i + 1]) * gain;
  }
  return { mid, side };
}

/**
 * One pass over an input, piece by piece (a piece is at most `maxPieceSize` seconds, so memory
 * does not grow with the input): the RMS of each piece's mid, and each piece's sum of mid and
 * side magnitude spectra. The spectra of the loudest pieces are averaged afterwards.
 */
async function analyzeLevels(
  file: SampleFile,
  gain: number,
  config: MatcheringConfig,
  signal?: AbortSignal,
): Promise<LevelAnalysis> {
  const { divisions, pieceSize } = pieceLayout(file.frames, config);
  const rmses = new Float64Array(divisions);
  const midSums: Float64Array[] = [];
  const sideSums: Float64Array[] = [];
  let framesPerPiece = 0;
  for (let p = 0; p < divisions; p++) {
    signal?.throwIfAborted();
    const { mid, side } = midSide(await file.read(p * pieceSize, pieceSize), gain);
    rmses[p] = rms(mid);
    const midSum = new MagnitudeSpectrumSum(config.fftSize);
    const sideSum = new MagnitudeSpectrumSum(config.fftSize);
    for (let at = 0; at + config.fftSize <= pieceSize; at += config.fftSize) {
      midSum.addFrame(mid, at, 1);
      sideSum.addFrame(side, at, 1);
    }
    framesPerPiece = midSum.frames;
    midSums.push(midSum.sum);
    sideSums.push(sideSum.sum);
  }
  const { loudest, matchRms } = loudestOf(rmses);
  const average = (sums: Float64Array[]): Float64Array => {
    const out = new Float64Array(config.fftSize / 2 + 1);
    for (const p of loudest) for (let k = 0; k < out.length; k++) out[k] += sums[p][k];
    const count = loudest.length * framesPerPiece;
    for (let k = 0; k < out.length; k++) out[k] /= count;
    return out;
  };
  return { divisions, pieceSize, loudest, matchRms, midSpectrum: average(midSums), sideSpectrum: average(sideSums) };
}

/** The largest |sample| of a file, read block by block. */
async function peakOf(file: SampleFile, signal?: AbortSignal): Promise<number> {
  let peak = 0;
  for (let at = 0; at < file.frames; at += BLOCK) {
    signal?.throwIfAborted();
    const block = await file.read(at, Math.min(BLOCK, file.frames - at));
    for (const v of block) peak = Math.max(peak, Math.abs(v));
  }
  return peak;
}

/** numpy's `allclose` of two equally long files (Matchering refuses a target equal to its reference). */
async function filesClose(a: SampleFile, b: SampleFile, signal?: AbortSignal): Promise<boolean> {
  if (a.frames !== b.frames) return false;
  for (let at = 0; at < a.frames; at += BLOCK) {
    signal?.throwIfAborted();
    const count = Math.min(BLOCK, a.frames - at);
    const [x, y] = await Promise.all([a.read(at, count), b.read(at, count)]);
    for (let i = 0; i < x.length; i++) if (!(Math.abs(x[i] - y[i]) <= 1e-8 + 1e-5 * Math.abs(y[i]))) return false;
  }
  return true;
}

const BLOCK = 1 << 16;
/** overlap-save FFT size for the 4096-tap FIRs */
const CONVOLUTION_FFT = 16384;

/**
 * Convolves the target's mid and side with their FIRs, `fftconvolve(..., "same")` (output i is the
 * full convolution at i + (taps − 1) / 2), by overlap-save with both channels in one complex FFT
 * (mid real, side imaginary), into a float64 mid/side file.
 */
async function convolveTarget(
  target: SampleFile,
  gain: number,
  midFir: Float64Array,
  sideFir: Float64Array,
  out: SampleFile,
  signal: AbortSignal | undefined,
  progress: (fraction: number) => void,
): Promise<void> {
  const taps = midFir.length;
  const size = CONVOLUTION_FFT;
  const hop = size - taps;
  const fft = new ComplexFft(size);
  const spectrumOf = (fir: Float64Array) => {
    const re = new Float64Array(size);
    const im = new Float64Array(size);
    re.set(fir);
    fft.forward(re, im);
    return { re, im };
  };
  const hm = spectrumOf(midFir);
  const hs = spectrumOf(sideFir);
  const lead = (taps - 1) >> 1;
  const re = new Float64Array(size);
  const im = new Float64Array(size);
  for (let start = 0; start < target.frames; start += hop) {
    signal?.throwIfAborted();
    const count = Math.min(hop, target.frames - start);
    // full-convolution outputs n = start + lead .. + count need inputs from n − taps + 1
    const first = start + lead - taps + 1;
    const { mid, side } = midSide(await target.read(first, count + taps - 1), gain);
    re.fill(0);
    im.fill(0);
    re.set(mid);
    im.set(side);
    fft.forward(re, im);
    for (let k = 0; k <= size / 2; k++) {
      const j = (size - k) % size;
      // the two real channels' spectra from the packed one
      const mRe = (re[k] + re[j]) / 2;
      const mIm = (im[k] - im[j]) / 2;
      const sRe = (im[k] + im[j]) / 2;
      const sIm = (re[j] - re[k]) / 2;
      const ymRe = mRe * hm.re[k] - mIm * hm.im[k];
      const ymIm = mRe * hm.im[k] + mIm * hm.re[k];
      const ysRe = sRe * hs.re[k] - sIm * hs.im[k];
      const ysIm = sRe * hs.im[k] + sIm * hs.re[k];
      // Y = Ym + i·Ys at k, and its mirror uses the conjugates
      re[k] = ymRe - ysIm;
      im[k] = ymIm + ysRe;
      if (j !== k) {
        re[j] = ymRe + ysIm;
        im[j] = -ymIm + ysRe;
      }
    }
    fft.inverse(re, im);
    const block = new Float64Array(count * 2);
    for (let i = 0; i < count; i++) {
      block[2 * i] = re[taps - 1 + i];
      block[2 * i + 1] = im[taps - 1 + i];
    }
    await out.writeFloat64(start, block);
    progress((start + count) / target.frames);
  }
}

/**
 * `out[i] = max(src[first(i) ..= last(i)])` for windows whose ends never move back (a monotonic
 * queue of candidate indices: each index enters and leaves once).
 */
function windowMaxima(src: Float64Array, count: number, first: (i: number) => number, last: (i: number) => number): Float64Array {
  const out = new Float64Array(count);
  const queue = new Int32Array(src.length);
  let head = 0;
  let tail = 0;
  let next = 0;
  for (let i = 0; i < count; i++) {
    const hi = last(i);
    for (; next <= hi; next++) {
      while (tail > head && src[queue[tail - 1]] <= src[next]) tail--;
      queue[tail++] = next;
    }
    const lo = first(i);
    while (queue[head] < lo) head++;
    out[i] = src[queue[head]];
  }
  return out;
}

/** Applies gains one after the other, as Matchering amplifies its arrays step by step. */
const applyGains = (value: number, gains: readonly number[]): number => {
  for (const g of gains) value *= g;
  return value;
};

/**
 * Matchering's level correction: `rmsCorrectionSteps` times, the RMS of the loudest pieces of
 * the clipped mid (the target's pieces) is brought to the reference's.
 */
async function correctLevels(
  convolved: SampleFile,
  layout: { divisions: number; pieceSize: number },
  referenceMatchRms: number,
  config: MatcheringConfig,
  signal: AbortSignal | undefined,
  progress: (fraction: number) => void,
): Promise<number[]> {
  const gains: number[] = [];
  for (let step = 0; step < config.rmsCorrectionSteps; step++) {
    const rmses = new Float64Array(layout.divisions);
    for (let p = 0; p < layout.divisions; p++) {
      signal?.throwIfAborted();
      const frames = await convolved.read(p * layout.pieceSize, layout.pieceSize);
      let sum = 0;
      for (let i = 0; i < layout.pieceSize; i++) {
        const v = Math.min(1, Math.max(-1, applyGains(frames[2 * i], gains)));
        sum += v * v;
      }
      rmses[p] = Math.sqrt(sum / layout.pieceSize);
      progress((step + (p + 1) / layout.divisions) / config.rmsCorrectionSteps);
    }
    const { matchRms } = loudestOf(rmses);
    gains.push(referenceMatchRms / Math.max(config.minValue, matchRms));
  }
  return gains;
}

/** Result frames [start, start + count) as interleaved L/R: ms_to_lr, then the correction gains. */
async function resultFrames(
  convolved: SampleFile,
  start: number,
  count: number,
  gains: readonly number[],
): Promise<Float64Array> {
  const ms = await convolved.read(start, count);
  const lr = new Float64Array(ms.length);
  for (let i = 0; i < ms.length; i += 2) {
    lr[i] = applyGains(ms[i] + ms[i + 1], gains);
    lr[i + 1] = applyGains(ms[i] - ms[i + 1], gains);
  }
  return lr;
}

/**
 * The Hyrax limiter's gain, computed in three streaming passes with two float64 files: forwards
 * (hard-clip gain, its centred running maximum, the first run of the attack `filtfilt` and the
 * causal hold/release filters), backwards (the second `filtfilt` run), and the application.
 * Returns false when no sample exceeds the threshold (Matchering then leaves the result as is).
 */
async function limiterGain(
  convolved: SampleFile,
  gains: readonly number[],
  config: MatcheringConfig,
  scratchDir: string,
  signal: AbortSignal | undefined,
  progress: (fraction: number) => void,
): Promise<SampleFile | null> {
  const n = convolved.frames;
  const shape = hyraxShape(config);
  const threshold = config.threshold;
  const half = shape.attackHalfWindow;
  const hold = shape.holdWindow;
  const pad = shape.padLength;
  if (n <= pad) throw new MatcheringInputError("target", "the target is too short");
  /** 1 − threshold / max(|L|, |R|, threshold): the gain reduction a hard clip would need */
  const rectified = (lr: Float64Array, i: number): number => {
    const peak = Math.max(Math.abs(lr[2 * i]), Math.abs(lr[2 * i + 1]));
    return (peak <= threshold ? threshold : peak) / threshold;
  };

  const forward = await SampleFile.create(scratchDir, "attack-forward.f64", 1, 8);
  const envelope = await SampleFile.create(scratchDir, "envelope.f64", 1, 8);
  try {
    const c = shape.attackPole;
    const b0 = 1 - c;
    // lfilter_zi of the attack filter: its state after a unit step, scaled by the first input
    const zi = (c * (1 - c)) / (1 - c);
    const attack = new FirstOrderFilter(b0, 0, -c);
    const holdFilter = butterworthLowpass(shape.holdCutoff, config.internalSampleRate);
    const release = butterworthLowpass(shape.releaseCutoff, config.internalSampleRate);
    let allClose = true;
    let tail: Float64Array | null = null;
    for (let start = 0; start < n; start += BLOCK) {
      signal?.throwIfAborted();
      const count = Math.min(BLOCK, n - start);
      // hard-clip gain over [start − half − hold, start + count + half), clamped to the track
      const from = Math.max(0, start - half - hold);
      const to = Math.min(n, start + count + half);
      const lr = await resultFrames(convolved, from, to - from, gains);
      const clip = new Float64Array(to - from);
      for (let i = 0; i < clip.length; i++) {
        const rect = rectified(lr, i);
        if (from + i >= start && from + i < start + count && !(Math.abs(rect - 1) <= 1e-8 + 1e-5)) allClose = false;
        clip[i] = 1 - 1 / rect;
      }
      // the attack stage's centred running maximum, over [max(0, start − hold), start + count)
      const slidFrom = Math.max(0, start - hold);
      const slided = windowMaxima(
        clip,
        start + count - slidFrom,
        (i) => Math.max(0, slidFrom + i - half) - from,
        (i) => Math.min(n - 1, slidFrom + i + half) - from,
      );
      // the hold stage: trailing running maximum of `hold` samples of the attack's maximum
      const held = windowMaxima(
        slided,
        count,
        (i) => Math.max(slidFrom, start + i - hold + 1) - slidFrom,
        (i) => start + i - slidFrom,
      );
      if (start === 0) {
        // filtfilt's odd extension before the start, the filter started at its steady state
        const x0 = 2 * slided[0] - slided[pad];
        attack.state = zi * x0;
        for (let k = pad; k >= 1; k--) attack.step(2 * slided[0] - slided[k]);
      }
      const y1 = new Float64Array(count);
      const env = new Float64Array(count);
      for (let i = 0; i < count; i++) {
        const at = start + i;
        const s = slided[at - slidFrom];
        y1[i] = attack.step(s);
        const h = held[i];
        const holdOut = holdFilter.step(h);
        const released = release.step(Math.max(h, holdOut));
        env[i] = Math.max(clip[at - from], Math.max(holdOut, released));
      }
      await forward.writeFloat64(start, y1);
      await envelope.writeFloat64(start, env);
      if (start + count === n) tail = slided.subarray(slided.length - pad - 1).slice();
      progress(((start + count) / n) * 0.5);
    }
    if (allClose) {
      await Promise.all([forward.close(), envelope.close()]);
      await Promise.all([rm(forward.path, { force: true }), rm(envelope.path, { force: true })]);
      return null;
    }
    if (!tail) throw new Error("the limiter saw no samples");
    // filtfilt's odd extension after the end, still forwards; the backward run starts from its last output
    const last = tail[pad];
    const extension: number[] = [];
    for (let k = 1; k <= pad; k++) extension.push(attack.step(2 * last - tail[pad - k]));
    const backward = new FirstOrderFilter(b0, 0, -c, zi * extension[pad - 1]);
    for (let k = pad - 1; k >= 0; k--) backward.step(extension[k]);
    for (let end = n; end > 0; end -= BLOCK) {
      signal?.throwIfAborted();
      const start = Math.max(0, end - BLOCK);
      const [y1, env] = await Promise.all([forward.read(start, end - start), envelope.read(start, end - start)]);
      const gain = new Float64Array(end - start);
      for (let i = gain.length - 1; i >= 0; i--) gain[i] = 1 - Math.max(env[i], backward.step(y1[i]));
      await envelope.writeFloat64(start, gain);
      progress(0.5 + ((n - start) / n) * 0.5);
    }
    await forward.close();
    await rm(forward.path, { force: true });
    return envelope;
  } catch (err) {
    await Promise.allSettled([forward.close(), envelope.close()]);
    await Promise.allSettled([rm(forward.path, { force: true }), rm(envelope.path, { force: true })]);
    throw err;
  }
}

/**
 * Matchering's reference mastering of the file `targetPath` to the file `referencePath`, the
 * result (Matchering's default, limited output) streamed to `run.write`. Both inputs are decoded
 * to float32 stereo scratch files at the internal rate first; every later pass streams over them,
 * so memory does not grow with the length (disk does: see `MatcheringRun.scratchDir`).
 *
 * Stages, as upstream runs them: the reference normalised to the threshold when quieter; mid/side
 * of both; each cut into pieces ≤ `maxPieceSize`, the pieces at least as loud as the RMS of all
 * pieces' RMS are the loudest; the target's level matched to the reference's on those; a
 * `fftSize`-tap FIR each for mid and side from their average spectra (log-grid LOWESS smoothing);
 * convolution; `rmsCorrectionSteps` level corrections on the clipped mid; the Hyrax limiter; the
 * reference's normalisation undone on the result.
 */
export async function matchReference(targetPath: string, referencePath: string, run: MatcheringRun): Promise<MatcheringSummary> {
  const config = run.config ?? MATCHERING_DEFAULTS;
  const { signal } = run;
  const report = (from: number, span: number) => (fraction: number) => run.onProgress?.(from + span * fraction);
  const dir = await mkdtemp(join(run.scratchDir, "matchering-"));
  const files: SampleFile[] = [];
  try {
    const rate = config.internalSampleRate;
    const target = await SampleFile.decode(targetPath, dir, "target.f32", rate, signal);
    files.push(target);
    const reference = await SampleFile.decode(referencePath, dir, "reference.f32", rate, signal);
    files.push(reference);
    report(0, 0.1)(1);
    for (const [field, file] of [
      ["target", target],
      ["reference", reference],
    ] as const) {
      if (file.frames > config.maxLength * rate)
        throw new MatcheringInputError(field, `the ${field} is longer than ${config.maxLength} seconds`);
      if (file.frames <= config.fftSize)
        throw new MatcheringInputError(field, `the ${field} is shorter than ${config.fftSize} samples at ${rate} Hz`);
    }
    if (await filesClose(target, reference, signal))
      throw new MatcheringInputError("reference", "the target and the reference are the same audio");

    // the reference is raised to the threshold when its peak is below it; the result comes down by as much at the end
    const referencePeak = await peakOf(reference, signal);
    const finalAmplitudeCoefficient =
      referencePeak < config.threshold ? Math.max(config.minValue, referencePeak / config.threshold) : 1;
    const referenceLevels = await analyzeLevels(reference, 1 / finalAmplitudeCoefficient, config, signal);
    const targetLevels = await analyzeLevels(target, 1, config, signal);
    const rmsCoefficient = referenceLevels.matchRms / Math.max(config.minValue, targetLevels.matchRms);
    report(0.1, 0.1)(1);

    const scaledTarget = (spectrum: Float64Array) => spectrum.map((v) => Math.max(config.minValue, v * rmsCoefficient));
    const midFir = matchingFir(scaledTarget(targetLevels.midSpectrum), referenceLevels.midSpectrum, config);
    const sideFir = matchingFir(scaledTarget(targetLevels.sideSpectrum), referenceLevels.sideSpectrum, config);
    await reference.close();
    files.splice(files.indexOf(reference), 1);
    await rm(reference.path, { force: true });

    const convolved = await SampleFile.create(dir, "convolved.f64", 2, 8);
    files.push(convolved);
    await convolveTarget(target, rmsCoefficient, midFir, sideFir, convolved, signal, report(0.2, 0.2));
    const gains = await correctLevels(convolved, targetLevels, referenceLevels.matchRms, config, signal, report(0.4, 0.2));
    const limiter = await limiterGain(convolved, gains, config, dir, signal, report(0.6, 0.2));
    if (limiter) files.push(limiter);

    const write = report(0.8, 0.2);
    for (let start = 0; start < convolved.frames; start += BLOCK) {
      signal?.throwIfAborted();
      const count = Math.min(BLOCK, convolved.frames - start);
      const lr = await resultFrames(convolved, start, count, gains);
      const gain = limiter ? await limiter.read(start, count) : null;
      const block = new Float32Array(count * 2);
      for (let i = 0; i < count; i++) {
        const g = gain ? gain[i] : 1;
        block[2 * i] = lr[2 * i] * g * finalAmplitudeCoefficient;
        block[2 * i + 1] = lr[2 * i + 1] * g * finalAmplitudeCoefficient;
      }
      await run.write(block);
      write((start + count) / convolved.frames);
    }
    return {
      targetFrames: target.frames,
      referenceFrames: reference.frames,
      finalAmplitudeCoefficient,
      rmsCoefficient,
      correctionCoefficients: gains,
      limiterApplied: limiter !== null,
    };
  } finally {
    await Promise.allSettled(files.map((f) => f.close()));
    await rm(dir, { recursive: true, force: true });
  }
}
