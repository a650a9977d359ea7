export { ffprobeAudio, probeAudio, prepareFfmpeg, type AudioProbe } from './probe-audio.ts';
export { decodeToPcm, countDecodedFrames, type DecodeToPcmOptions } from './decode-to-pcm.ts';
export {
  StereoPcmEncoder,
  encodeStereoPcm,
  type EncodeTarget,
  type EncodeFormat,
  type WavSampleFormat,
  type StereoEncoderOptions,
} from './encode-pcm.ts';
export { AudioDecodeError, AudioEncodeError } from './errors.ts';
