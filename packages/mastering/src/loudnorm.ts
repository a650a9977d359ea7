import { AudioDecodeError, runTool } from "@mixdown/audio";
import type { LoudnessTarget } from "./config.ts";

/** loudnorm's default loudness range target; raised to the input's own range so that only the true peak can force the dynamic mode. */
const LOUDNORM_DEFAULT_LRA = 7;
const LOUDNORM_MAX_LRA = 50;

/** What loudnorm prints (`print_format=json`) at the end of a run. */
export interface LoudnormReport {
  inputI: number;
  inputTp: number;
  inputLra: number;
  inputThresh: number;
  outputI: number;
  outputTp: number;
  outputLra: number;
  targetOffset: number;
  /** `linear` (one gain for the whole file) or `dynamic` (loudnorm's compressor/limiter) */
  normalizationType: "linear" | "dynamic";
}

/** Reads the JSON block loudnorm prints last on stderr. */
export function parseLoudnormReport(stderr: string): LoudnormReport {
  const start = stderr.lastIndexOf("{");
  const end = stderr.lastIndexOf("}");
  if (start < 0 || end < start) throw new Error("ffmpeg's loudnorm printed no measurement");
  const raw = JSON.parse(stderr.slice(start, end + 1)) as Record<string, string>;
  const num = (key: string): number => {
    const value = Number(raw[key]);
    if (!Number.isFinite(value)) throw new Error(`loudnorm's ${key} is ${raw[key]}`);
    return value;
  };
  return {
    inputI: num("input_i"),
    inputTp: num("input_tp"),
    inputLra: num("input_lra"),
    inputThresh: num("input_thresh"),
    outputI: num("output_i"),
    outputTp: num("output_tp"),
    outputLra: num("output_lra"),
    targetOffset: num("target_offset"),
    normalizationType: raw.normalization_type === "linear" ? "linear" : "dynamic",
  };
}

/** The first pass's filter: measure only. */
export function loudnormMeasureFilter(target: LoudnessTarget): string {
  return `loudnorm=I=${target.integratedLufs}:TP=${target.truePeakDb}:LRA=${LOUDNORM_DEFAULT_LRA}:print_format=json`;
}

/**
 * The second pass's filter, from the first pass's measurement: `linear=true`, so loudnorm applies
 * one gain (target − measured integrated loudness) when the true peak stays under the target, and
 * falls back to its dynamic mode otherwise. The loudness range target is the input's own range
 * (at least loudnorm's default 7 LU), so the range never forces the dynamic mode.
 */
export function loudnormApplyFilter(target: LoudnessTarget, measured: LoudnormReport): string {
  const lra = Math.min(LOUDNORM_MAX_LRA, Math.max(LOUDNORM_DEFAULT_LRA, Math.ceil(measured.inputLra * 10) / 10));
  return (
    `loudnorm=I=${target.integratedLufs}:TP=${target.truePeakDb}:LRA=${lra}` +
    `:measured_I=${measured.inputI}:measured_TP=${measured.inputTp}:measured_LRA=${measured.inputLra}` +
    `:measured_thresh=${measured.inputThresh}:offset=${measured.targetOffset}:linear=true:print_format=json`
  );
}

/** Runs ffmpeg with `args` (killed when `signal` aborts); resolves with the tail of its stderr, where loudnorm prints. */
async function runFfmpeg(inputPath: string, args: string[], signal?: AbortSignal): Promise<string> {
  signal?.throwIfAborted();
  const run = await runTool("ffmpeg", inputPath, ["-hide_banner", "-nostats", "-nostdin", ...args], { signal }, () => {});
  if (run.aborted) throw signal?.reason ?? new Error("aborted");
  if (run.code !== 0) throw new AudioDecodeError(inputPath, run.lastError);
  return run.stderrTail;
}

/** loudnorm's first pass over the first audio stream of `path`. */
export async function measureForLoudnorm(path: string, target: LoudnessTarget, signal?: AbortSignal): Promise<LoudnormReport> {
  const stderr = await runFfmpeg(
    path,
    ["-i", path, "-map", "0:a:0", "-af", loudnormMeasureFilter(target), "-f", "null", "-"],
    signal,
  );
  return parseLoudnormReport(stderr);
}

/** An output of the loudness mode; the input's channels are kept (a mono input stays mono: BS.1770 would count it 3 LU louder duplicated). */
export type LoudnessOutput =
  | { format: "wav"; path: string; bitDepth: 16 | 24 }
  | { format: "mp3"; path: string; /** CBR, default 320 */ bitrateKbps?: number };

/**
 * ffmpeg's two-pass loudness normalisation of `path` to `target`: the measuring pass, then the
 * linear pass (see `loudnormApplyFilter`), resampled back from loudnorm's 192 kHz to
 * `sampleRate` (soxr) and written to every output by one ffmpeg process.
 */
export async function normalizeLoudness(
  path: string,
  options: {
    target: LoudnessTarget;
    sampleRate: number;
    outputs: LoudnessOutput[];
    signal?: AbortSignal;
    onProgress?: (fraction: number) => void;
  },
): Promise<{ measured: LoudnormReport; applied: LoudnormReport }> {
  const { target, sampleRate, outputs, signal } = options;
  const measured = await measureForLoudnorm(path, target, signal);
  options.onProgress?.(0.5);
  const labels = outputs.map((_, i) => `[o${i}]`);
  const graph = `[0:a:0]${loudnormApplyFilter(target, measured)},aresample=${sampleRate}:resampler=soxr,asplit=${outputs.length}${labels.join("")}`;
  const args = ["-y", "-i", path, "-filter_complex", graph];
  outputs.forEach((output, i) => {
    args.push("-map", labels[i]);
    if (output.format === "wav") args.push("-c:a", output.bitDepth === 16 ? "pcm_s16le" : "pcm_s24le", "-f", "wav", output.path);
    else args.push("-c:a", "libmp3lame", "-b:a", `${output.bitrateKbps ?? 320}k`, "-f", "mp3", output.path);
  });
  const applied = parseLoudnormReport(await runFfmpeg(path, args, signal));
  options.onProgress?.(1);
  return { measured, applied };
}
