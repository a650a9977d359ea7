import { AUDIO_CONTENT_TYPES, type AudioFormat } from "@mixdown/audio";

// What the bytes of an upload are is @mixdown/audio's (the CLI's `separate` decides a folder's audio
// files the same way, the worker a batch link's file), and so is the media type it is stored as.
export { sniffAudioFormat, type AudioFormat, type SniffResult } from "@mixdown/audio";

export const CONTENT_TYPE: Record<AudioFormat, string> = AUDIO_CONTENT_TYPES;
