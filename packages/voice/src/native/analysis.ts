import { melFilterbank } from "../dsp/mel.ts";
import type { StftBatch } from "../dsp/stft-stream.ts";
import { dbToNepers, NATIVE_LAYOUT } from "./layout.ts";

const EPS = 1e-10;

/** Frames this far below the loud end (95th percentile) of a recording are not the voice. */
const ACTIVE_RANGE_DB = 30;

/** Log-mel envelope (normalised by the frame's own power) and log power of STFT frames. */
export class EnvelopeAnalyzer {
  readonly bands = NATIVE_LAYOUT.bands;
  readonly #filters = melFilterbank(
    NATIVE_LAYOUT.sampleRate,
    NATIVE_LAYOUT.nFft,
    NATIVE_LAYOUT.bands,
    NATIVE_LAYOUT.fMin,
    NATIVE_LAYOUT.fMax,
  );
  readonly #ranges: Array<[number, number]>;

  constructor() {
    this.#ranges = this.#filters.map((f) => {
      let lo = 0;
      while (lo < f.length && f[lo] === 0) lo++;
      let hi = f.length - 1;
      while (hi > lo && f[hi] === 0) hi--;
      return [lo, hi + 1];
    });
  }

  /** Writes each frame's envelope into `envelope` [count][bands] and its ln power into `level` [count]. */
  analyze(batch: StftBatch, envelope: Float32Array, level: Float32Array): void {
    const { count, bins, re, im } = batch;
    const power = new Float32Array(bins);
    for (let f = 0; f < count; f++) {
      let total = 0;
      for (let k = 0; k < bins; k++) {
        const p = re[f * bins + k]! ** 2 + im[f * bins + k]! ** 2;
        power[k] = p;
        total += p;
      }
      const lv = Math.log(total / NATIVE_LAYOUT.nFft + EPS);
      level[f] = lv;
      for (let b = 0; b < this.bands; b++) {
        const filter = this.#filters[b]!;
        const [lo, hi] = this.#ranges[b]!;
        let e = 0;
        for (let k = lo; k < hi; k++) e += filter[k]! * power[k]!;
        envelope[f * this.bands + b] = Math.log(e / NATIVE_LAYOUT.nFft + EPS) - lv;
      }
    }
  }
}

export interface VoiceStats {
  mean: Float32Array;
  std: Float32Array;
  /** Mean ln power of the active frames. */
  level: number;
  activeFrames: number;
  frames: number;
}

/** Collects envelope frames, then summarises the active ones (speech, not pauses). */
export class VoiceStatsAccumulator {
  readonly #analyzer = new EnvelopeAnalyzer();
  #envelopes: Float32Array[] = [];
  #levels: Float32Array[] = [];

  add(batch: StftBatch): void {
    const env = new Float32Array(batch.count * this.#analyzer.bands);
    const lv = new Float32Array(batch.count);
    this.#analyzer.analyze(batch, env, lv);
    this.#envelopes.push(env);
    this.#levels.push(lv);
  }

  finish(): VoiceStats {
    const bands = this.#analyzer.bands;
    const levels = Float32Array.from(this.#levels.flatMap((l) => Array.from(l)));
    const sorted = Float32Array.from(levels).sort();
    const loud = sorted.length > 0 ? sorted[Math.floor(0.95 * (sorted.length - 1))]! : 0;
    const threshold = loud - dbToNepers(ACTIVE_RANGE_DB);
    const sum = new Float64Array(bands);
    const sumSq = new Float64Array(bands);
    let active = 0;
    let levelSum = 0;
    let i = 0;
    for (let c = 0; c < this.#envelopes.length; c++) {
      const env = this.#envelopes[c]!;
      const lv = this.#levels[c]!;
      for (let f = 0; f < lv.length; f++, i++) {
        if (lv[f]! < threshold) continue;
        active++;
        levelSum += lv[f]!;
        for (let b = 0; b < bands; b++) {
          const v = env[f * bands + b]!;
          sum[b] = sum[b]! + v;
          sumSq[b] = sumSq[b]! + v * v;
        }
      }
    }
    const mean = new Float32Array(bands);
    const std = new Float32Array(bands);
    for (let b = 0; b < bands; b++) {
      const m = active > 0 ? sum[b]! / active : 0;
      mean[b] = m;
      std[b] = Math.max(0.05, Math.sqrt(Math.max(0, active > 0 ? sumSq[b]! / active - m * m : 1)));
    }
    return { mean, std, level: active > 0 ? levelSum / active : -20, activeFrames: active, frames: levels.length };
  }
}
