import ffmpeg from "fluent-ffmpeg";
import { countDecodedFramesWithin } from "./count-decoded-frames.ts";
import { AudioDecodeError } from "./errors.ts";
import { runTool } from "./run-tool.ts";
import { probeWavHeader } from "./wav-header.ts";

export interface AudioProbe {
  /** container as ffprobe names it: `wav`, `mp3`, `flac`, `matroska,webm`, `ogg`, ... */
  format: string;
  /** codec of the first audio stream: `pcm_s16le`, `mp3`, `flac`, `opus`, ... */
  codec: string;
  sampleRate: number;
  channels: number;
  /** seconds */
  duration: number;
  /** frames (samples per channel) at `sampleRate` */
  frames: number;
  /**
   * True when `frames` is sample-accurate (lossless codec with a duration counted
   * in samples, or a stream that had to be decoded to find its length). Lossy
   * containers only give an estimate: encoder delay and padding make the decoded
   * length differ; use `countDecodedFrames` then. Also false when a count was
   * cut short by `countTimeoutMs`: `frames` is then a lower bound.
   */
  framesExact: boolean;
  /** bits per second, when the container says */
  bitRate?: number;
}

const LOSSLESS_CODEC = /^(pcm_|flac$|alac$|wavpack$|tta$|ape$)/;

function toNumber(value: unknown): number | undefined {
  const n = typeof value === "number" ? value : typeof value === "string" ? Number(value) : Number.NaN;
  return Number.isFinite(n) ? n : undefined;
}

export interface ProbeOptions {
  signal?: AbortSignal;
  /** Longest ffprobe may take (default 30 s): a file it cannot get through is no audio to us. */
  ffprobeTimeoutMs?: number;
  /**
   * Longest the frame count of a stream whose container states no length may take (default: no
   * limit). When the limit ends the count after audio came out, that much is returned with
   * `framesExact: false`, so a slow machine does not turn valid audio into an error; when none
   * came out, AudioDecodeError. The API bounds its uploads' checks with it.
   */
  countTimeoutMs?: number;
  /**
   * Where the length has to be counted, stop after this many seconds of audio: enough to know a
   * file is longer than a limit without decoding all of it (the frames are then `maxSeconds`
   * worth plus a little, and `framesExact` false).
   */
  countUpToSeconds?: number;
}

interface FfprobeJson {
  format?: { format_name?: string; duration?: string; bit_rate?: string };
  streams?: Array<Record<string, string | number | undefined>>;
}

/**
 * Reads format, codec, rate, channels and length of the first audio stream:
 * from the header for plain PCM WAV files, with ffprobe for everything else.
 * Where the container states no length (FLAC written to a pipe, WebM from a
 * browser's MediaRecorder), the stream is decoded once to count its frames.
 * Rejects with AudioDecodeError (its `reason` names no path) when the file is
 * not readable audio.
 */
export async function probeAudio(path: string, options: ProbeOptions = {}): Promise<AudioProbe> {
  return (await probeWavHeader(path)) ?? ffprobeAudio(path, options);
}

/** probeAudio through ffprobe, whatever the format. */
export async function ffprobeAudio(path: string, options: ProbeOptions = {}): Promise<AudioProbe> {
  let out = "";
  const run = await runTool(
    "ffprobe",
    path,
    ["-v", "error", "-print_format", "json", "-show_format", "-show_streams", path],
    { timeoutMs: options.ffprobeTimeoutMs ?? 30_000, signal: options.signal },
    (chunk) => (out += chunk),
  );
  if (run.aborted) throw options.signal!.reason;
  if (run.timedOut) throw new AudioDecodeError(path, "ffprobe took too long");
  if (run.code !== 0) throw new AudioDecodeError(path, run.lastError || `ffprobe exited with ${run.code ?? run.signal}`);
  let data: FfprobeJson;
  try {
    data = JSON.parse(out) as FfprobeJson;
  } catch (err) {
    throw new AudioDecodeError(path, `unreadable ffprobe output: ${(err as Error).message}`);
  }
  data.format ??= {};
  const stream = (data.streams ?? []).find((s) => s.codec_type === "audio");
  if (!stream) throw new AudioDecodeError(path, "no audio stream");
  const sampleRate = toNumber(stream.sample_rate);
  const channels = toNumber(stream.channels);
  if (!sampleRate || !channels) throw new AudioDecodeError(path, "audio stream has no sample rate or channel count");
  const codec = String(stream.codec_name ?? "unknown");
  const durationTs = toNumber(stream.duration_ts);
  const sampleTimeBase = stream.time_base === `1/${sampleRate}`;
  const duration = toNumber(stream.duration) ?? toNumber(data.format.duration) ?? 0;
  const stated = LOSSLESS_CODEC.test(codec) && durationTs !== undefined && sampleTimeBase;
  const counted =
    !stated && !(duration > 0)
      ? await countDecodedFramesWithin(path, options.countTimeoutMs, options.signal, options.countUpToSeconds)
      : undefined;
  const frames = stated ? durationTs! : (counted?.frames ?? Math.max(0, Math.round(duration * sampleRate)));
  const capped =
    options.countUpToSeconds !== undefined && counted !== undefined && counted.frames / sampleRate >= options.countUpToSeconds;
  const framesExact = stated || (counted?.complete === true && !capped);
  const bitRate = toNumber(stream.bit_rate) ?? toNumber(data.format.bit_rate);
  return {
    format: String(data.format.format_name ?? "unknown"),
    codec,
    sampleRate,
    channels,
    duration: framesExact || counted ? frames / sampleRate : duration,
    frames,
    framesExact,
    ...(bitRate !== undefined ? { bitRate } : {}),
  };
}

let capabilities: Promise<void> | undefined;

/**
 * Fills fluent-ffmpeg's cache of ffmpeg's formats and encoders, which it
 * otherwise queries (two ffmpeg runs) before the first command of a process.
 * Long-lived workers call it at start-up so the first job does not pay for it.
 */
export function prepareFfmpeg(): Promise<void> {
  capabilities ??= Promise.all([
    new Promise<void>((resolve, reject) => ffmpeg.getAvailableFormats((err) => (err ? reject(err) : resolve()))),
    new Promise<void>((resolve, reject) => ffmpeg.getAvailableEncoders((err) => (err ? reject(err) : resolve()))),
  ]).then(() => undefined);
  capabilities.catch(() => {
    capabilities = undefined;
  });
  return capabilities;
}

/** `m:ss` or `h:mm:ss`. */
function clock(seconds: number): string {
  const s = Math.floor(seconds);
  const parts = [Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60];
  return parts[0]
    ? `${parts[0]}:${String(parts[1]).padStart(2, "0")}:${String(parts[2]).padStart(2, "0")}`
    : `${parts[1]}:${String(parts[2]).padStart(2, "0")}`;
}

/** The longest audio a job kind takes, and the setting that holds it (named in the refusal). */
export interface DurationLimit {
  seconds: number;
  setting: string;
}

/**
 * Null when the probed audio is at most `limit.seconds` long, else why not, naming the limit, the
 * setting that holds it and the file's length (`more than` when the count stopped at the limit).
 */
export function overDurationLimit(probe: AudioProbe, { seconds: maxSeconds, setting }: DurationLimit): string | null {
  const seconds = probe.frames / probe.sampleRate;
  if (seconds <= maxSeconds) return null;
  // A count stopped just past the limit (countUpToSeconds) knows only that it is longer.
  const length = probe.framesExact || seconds > maxSeconds + 2 ? clock(seconds) : `more than ${clock(maxSeconds)}`;
  return `is ${length} long; the limit is ${clock(maxSeconds)} (${setting} = ${maxSeconds} s)`;
}
