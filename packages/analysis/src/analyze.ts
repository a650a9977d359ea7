import { probeAudio, type AudioProbe } from "@mixdown/audio";
import { decodeMono } from "./decode-mono.ts";
import { ESSENTIA_SAMPLE_RATE, estimateKey, estimateTempo, type KeyEstimate, type TempoEstimate } from "./essentia.ts";
import { measureLoudness, type Loudness } from "./loudness.ts";

/** What an analysis finds in one input. */
export interface AudioAnalysis {
  /** Seconds of audio decoded. */
  durationSeconds: number;
  /** null for silence. */
  key: KeyEstimate | null;
  /** null for silence, or too few beats to name a tempo. */
  tempo: TempoEstimate | null;
  loudness: Loudness;
}

export interface AnalyzeOptions {
  /** The input's probe, when the caller has it (saves one ffprobe run). */
  probe?: AudioProbe;
  signal?: AbortSignal;
  /** Told 0-100 as the steps end. */
  onProgress?: (percent: number) => void;
}

/**
 * Key, tempo and beats (Essentia's KeyExtractor and RhythmExtractor2013 on the input mixed to
 * mono at 44.1 kHz), loudness (ffmpeg's ebur128 filter on the input as it is) and duration of
 * one audio file. Synchronous WebAssembly work: run it off the event loop (a worker thread).
 */
export async function analyzeAudioFile(path: string, options: AnalyzeOptions = {}): Promise<AudioAnalysis> {
  const { signal, onProgress } = options;
  const probe = options.probe ?? (await probeAudio(path));
  // ffmpeg measures loudness in its own process while this thread decodes and runs Essentia
  const loudness = measureLoudness(path, signal);
  loudness.catch(() => {});
  const samples = await decodeMono(path, { sampleRate: ESSENTIA_SAMPLE_RATE, probe, ...(signal ? { signal } : {}) });
  onProgress?.(20);
  signal?.throwIfAborted();
  const key = estimateKey(samples);
  onProgress?.(40);
  signal?.throwIfAborted();
  const tempo = estimateTempo(samples);
  onProgress?.(90);
  return { durationSeconds: samples.length / ESSENTIA_SAMPLE_RATE, key, tempo, loudness: await loudness };
}
