import { unprocessable, unsupportedMediaType } from "../http/errors.ts";
import { sniffAudioFormat, type AudioFormat } from "./audio-format.ts";
import { decodedDuration, decodeTimeLimitMs, probeAudio, ProbeError } from "./probe.ts";
import type { ReceivedFile } from "./receive-form.ts";

const FFPROBE_FORMATS: Record<AudioFormat, string[]> = {
  wav: ["wav"],
  mp3: ["mp3"],
  flac: ["flac"],
  webm: ["matroska,webm", "webm"],
};

function list(formats: readonly AudioFormat[]): string {
  return formats.length > 1 ? `${formats.slice(0, -1).join(", ")} or ${formats.at(-1)}` : formats[0]!;
}

/**
 * Decides a file's format from its bytes (magic numbers), then confirms with ffprobe that it
 * decodes as that format, has an audio stream and a positive duration: the one the container
 * states, or, where it states none (streamed FLAC, MediaRecorder WebM), the one found by decoding
 * the audio. The file name plays no part. 415: not one of the accepted formats; 422: an accepted
 * format that does not decode.
 */
export async function checkAudioUpload(
  file: ReceivedFile,
  accepted: readonly AudioFormat[],
  ffprobePath?: string,
): Promise<AudioFormat> {
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

  const undecodable = (error: unknown) => {
    if (error instanceof ProbeError) return unprocessable(`${field} is not decodable ${list(allowed)} audio: ${error.message}`);
    return error;
  };
  const probe = await probeAudio(file.path, ffprobePath).catch((error: unknown) => {
    throw undecodable(error);
  });
  const format = allowed.find((f) => FFPROBE_FORMATS[f].includes(probe.formatName));
  if (!format) {
    const detected = (Object.keys(FFPROBE_FORMATS) as AudioFormat[]).find((f) => FFPROBE_FORMATS[f].includes(probe.formatName));
    if (detected && !accepted.includes(detected)) throw unsupported(detected);
    throw unprocessable(`${field} is not decodable ${list(allowed)} audio (ffprobe reads it as ${probe.formatName || "unknown"})`);
  }
  if (probe.audioStreams === 0) throw unprocessable(`${field} has no audio stream`);
  const seconds =
    probe.durationSeconds > 0
      ? probe.durationSeconds
      : await decodedDuration(file.path, decodeTimeLimitMs(file.size)).catch((error: unknown) => {
          throw undecodable(error);
        });
  if (!(seconds > 0)) throw unprocessable(`${field} has no audio (duration 0)`);
  return format;
}
