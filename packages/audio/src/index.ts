export {
  ffprobeAudio,
  overDurationLimit,
  probeAudio,
  prepareFfmpeg,
  type AudioProbe,
  type DurationLimit,
  type ProbeOptions,
} from "./probe-audio.ts";
export { decodeToPcm, type DecodeToPcmOptions } from "./decode-to-pcm.ts";
export { probeWavHeader, readWavLayout, type WavLayout, type WavLayoutOptions } from "./wav-header.ts";
export { concatSamples } from "./samples.ts";
export { countDecodedFrames, countDecodedFramesWithin } from "./count-decoded-frames.ts";
export {
  StereoPcmEncoder,
  encodeStereoPcm,
  type EncodeTarget,
  type EncodeFormat,
  type WavSampleFormat,
  type StereoEncoderOptions,
} from "./encode-pcm.ts";
export { AudioDecodeError, AudioEncodeError } from "./errors.ts";
export {
  AUDIO_CONTENT_TYPES,
  sniffAudioFile,
  sniffAudioFormat,
  SNIFF_BYTES,
  type AudioFormat,
  type SniffResult,
} from "./audio-format.ts";
export { runTool, type ToolRun } from "./run-tool.ts";
