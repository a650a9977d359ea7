import { unprocessable, unsupportedMediaType } from "../http/errors.ts";
import { sniffAudioFormat, type AudioFormat } from "./audio-format.ts";
import { AudioDecodeError, overDurationLimit, probeAudio, type DurationLimit } from "@mixdown/audio";
import type { ReceivedFile } from "./receive-form.ts";

const FFPROBE_FORMATS: Record<AudioFormat, string[]> = {
  wav: ["wav"],
  mp3: ["mp3"],
  flac: ["flac"],
  webm: ["matroska,webm", "webm"],
};

/**
 * How much of the decoder's CPU time counting the audio of a file of `bytes` may take, when its
 * container states no length. Opus at 32 kbps, the most audio per byte a recorder writes, decodes
 * at about 2 MB per CPU second (FLAC and Vorbis at over 10 MB), and ffmpeg's start-up takes about
 * 0.35 s, so 5 s plus 1 s per MB leaves a 2x margin: 55 s for a 50 MB upload. CPU time, so a
 * loaded machine (the decoder getting a fraction of a core) does not refuse valid audio; the
 * clock still stops a count at ten times that.
 */
export function decodeTimeLimitMs(bytes: number): number {
  return 5_000 + Math.ceil(bytes / 1_000_000) * 1_000;
}

function list(formats: readonly AudioFormat[]): string {
  return formats.length > 1 ? `${formats.slice(0, -1).join(", ")} or ${formats.at(-1)}` : formats[0]!;
}

/** An upload that passed the check: its format and its length in seconds. */
export interface CheckedAudio {
  format: AudioFormat;
  seconds: number;
}

/**
 * Decides a file's format from its bytes (magic numbers), then confirms with `probeAudio` (the
 * worker's own: the WAV header, else ffprobe) that it decodes as that format, has an audio stream
 * and a positive length: the one the container states, or, where it states none (streamed FLAC,
 * MediaRecorder WebM), the one found by decoding the audio within `decodeTimeLimitMs` (and no
 * further than just past `limit`). A length over `limit` is a 422 naming both. The file name
 * plays no part. 415: not one of the accepted formats; 422: an accepted
 * format that does not decode. The length found is what the job counts in its key's usage.
 */
export async function checkAudioUpload(
  file: ReceivedFile,
  accepted: readonly AudioFormat[],
  limit?: DurationLimit,
): Promise<CheckedAudio> {
  const field = file.field;
  const unsupported = (what: string) =>
    unsupportedMediaType(`${field} must be ${list(accepted)} audio (decided from the file's content, not its name); got ${what}`);
  if (file.size === 0) throw unprocessable(`${field} is empty`);
  const sniffed = sniffAudioFormat(file.head);
  if (sniffed === null) throw unsupported("content that is none of these formats");
  if (sniffed === "matroska") throw unsupported("Matroska (only its WebM profile is accepted)");
  const candidates: AudioFormat[] = sniffed === "id3" ? ["mp3", "flac"] : [sniffed];
  const allowed = candidates.filter((f) => accepted.includes(f));
  if (allowed.length === 0) throw unsupported(sniffed === "id3" ? "an ID3-tagged file" : sniffed);

  let probe;
  try {
    probe = await probeAudio(file.path, { countTimeoutMs: decodeTimeLimitMs(file.size), countUpToSeconds: limit?.seconds });
  } catch (error) {
    if (!(error instanceof AudioDecodeError)) throw error;
    if (error.reason === "no audio stream") throw unprocessable(`${field} has no audio stream`);
    throw unprocessable(`${field} is not decodable ${list(allowed)} audio: ${error.reason}`);
  }
  const format = allowed.find((f) => FFPROBE_FORMATS[f].includes(probe.format));
  if (!format) {
    const detected = (Object.keys(FFPROBE_FORMATS) as AudioFormat[]).find((f) => FFPROBE_FORMATS[f].includes(probe.format));
    if (detected && !accepted.includes(detected)) throw unsupported(detected);
    throw unprocessable(`${field} is not decodable ${list(allowed)} audio (ffprobe reads it as ${probe.format || "unknown"})`);
  }
  if (!(probe.frames > 0)) throw unprocessable(`${field} has no audio (duration 0)`);
  const tooLong = limit && overDurationLimit(probe, limit);
  if (tooLong) throw unprocessable(`${field} ${tooLong}`);
  return { format, seconds: probe.frames / probe.sampleRate };
}
