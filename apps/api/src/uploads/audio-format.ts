import type { AudioFormat } from "@mixdown/audio";

// What the bytes of an upload are is @mixdown/audio's (the CLI's `separate` decides a folder's audio
// files the same way); what it is stored as is the API's.
export { sniffAudioFormat, type AudioFormat, type SniffResult } from "@mixdown/audio";

export const CONTENT_TYPE: Record<AudioFormat, string> = {
  wav: "audio/wav",
  mp3: "audio/mpeg",
  flac: "audio/flac",
  webm: "audio/webm",
};
