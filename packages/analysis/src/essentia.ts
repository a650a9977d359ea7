/// <reference path="./essentia-js.d.ts" />
import essentiaJs, { type Essentia, type EssentiaVector } from "essentia.js";

/** The rate Essentia's extractors are tuned for (its MonoLoader's default): inputs are resampled to it. */
export const ESSENTIA_SAMPLE_RATE = 44100;

export interface KeyEstimate {
  /** The tonic as Essentia names it: C, C#, D, Eb, E, F, F#, G, Ab, A, Bb, B. */
  key: string;
  scale: "major" | "minor";
  /** KeyExtractor's strength: the correlation of the input's chroma with the key's profile (0-1). */
  confidence: number;
}

export interface TempoEstimate {
  bpm: number;
  /** RhythmExtractor2013's (multifeature) confidence, 0-5.32: below 1.5 very low, 1.5-3.5 low to fair, above 3.5 excellent. */
  confidence: number;
  /** The beat positions, seconds from the start. */
  beats: number[];
}

let instance: Essentia | undefined;

/** The one Essentia WebAssembly instance of this thread, made on first use (about 10 MB of heap). */
function essentia(): Essentia {
  instance ??= new essentiaJs.Essentia(essentiaJs.EssentiaWASM);
  return instance;
}

/** The Essentia (essentia.js) version that computes key and tempo. */
export function essentiaVersion(): string {
  return essentia().version;
}

/** Runs `use` on `samples` copied into the WebAssembly heap, freeing the copy afterwards. */
function withVector<T>(samples: Float32Array, use: (vector: EssentiaVector) => T): T {
  const vector = essentia().arrayToVector(samples);
  try {
    return use(vector);
  } finally {
    vector.delete();
  }
}

/** True when no sample reaches -120 dBFS: Essentia's estimates of silence are noise. */
function silent(samples: Float32Array): boolean {
  for (let i = 0; i < samples.length; i++) if (Math.abs(samples[i]) > 1e-6) return false;
  return true;
}

/**
 * The key of mono `samples` at 44.1 kHz, by Essentia's KeyExtractor with its defaults (HPCP of
 * 4096-sample frames, the `bgate` profile): null for silence.
 */
export function estimateKey(samples: Float32Array): KeyEstimate | null {
  if (silent(samples)) return null;
  const result = withVector(samples, (v) => essentia().KeyExtractor(v));
  if (result.scale !== "major" && result.scale !== "minor") return null;
  return { key: result.key, scale: result.scale, confidence: result.strength };
}

/**
 * The tempo and beats of mono `samples` at 44.1 kHz, by Essentia's RhythmExtractor2013 with its
 * defaults (multifeature beat tracker, 40-208 BPM): null for silence or when it finds fewer than
 * two beats.
 */
export function estimateTempo(samples: Float32Array): TempoEstimate | null {
  if (silent(samples)) return null;
  return withVector(samples, (v) => {
    const result = essentia().RhythmExtractor2013(v);
    const vectors = [result.ticks, result.estimates, result.bpmIntervals];
    try {
      const beats = Array.from(essentia().vectorToArray(result.ticks));
      if (beats.length < 2 || !(result.bpm > 0)) return null;
      return { bpm: result.bpm, confidence: result.confidence, beats };
    } finally {
      for (const vector of vectors) vector.delete();
    }
  });
}
