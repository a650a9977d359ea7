import { open } from "node:fs/promises";
import { PassThrough } from "node:stream";
import ffmpeg from "fluent-ffmpeg";
import { AudioDecodeError } from "./errors.ts";
import { PIPE_BUFFER_BYTES, startFfmpeg } from "./ffmpeg-process.ts";
import { probeAudio, type AudioProbe } from "./probe-audio.ts";
import { readWavLayout, type WavLayout } from "./wav-header.ts";

export interface DecodeToPcmOptions {
  /** rate of the blocks; ffmpeg resamples with soxr when the input differs */
  sampleRate: number;
  /** frames per block; the last block may be shorter (default 32768) */
  blockFrames?: number;
  /** the input's probe, when the caller already has it (saves one ffprobe run) */
  probe?: AudioProbe;
  signal?: AbortSignal;
}

/**
 * Decodes any input ffmpeg reads to interleaved stereo float32 blocks
 * [L0, R0, L1, R1, ...] at `sampleRate`, streaming from ffmpeg's stdout so
 * memory stays flat however long the input is. Mono is copied to both
 * channels at unity gain (ffmpeg's own upmix would lower it by 3 dB); more
 * than two channels are downmixed with ffmpeg's standard matrix.
 *
 * A plain PCM WAV file (one or two channels) already at `sampleRate` is read
 * here, without ffmpeg: a process start costs ~0.2 s of CPU, more than the
 * decode of a short file, and a job reads its own lossless stems back this
 * way. The samples are converted as ffmpeg converts them (integer / 2^(bits−1),
 * float64 rounded to float32), so the blocks are the same bytes either way.
 *
 * Each yielded block is a new array the consumer may keep.
 */
export async function* decodeToPcm(path: string, options: DecodeToPcmOptions): AsyncGenerator<Float32Array, void, undefined> {
  const { sampleRate, signal } = options;
  const blockFrames = options.blockFrames ?? 32768;
  if (!Number.isInteger(sampleRate) || sampleRate <= 0) throw new RangeError(`invalid sampleRate ${sampleRate}`);
  if (!Number.isInteger(blockFrames) || blockFrames <= 0) throw new RangeError(`invalid blockFrames ${blockFrames}`);
  signal?.throwIfAborted();
  const wav = options.probe && options.probe.format !== "wav" ? undefined : await readWavLayout(path);
  if (wav && wav.probe.sampleRate === sampleRate && readsAsIs(wav)) {
    yield* readWavPcm(path, wav, blockFrames, signal);
    return;
  }
  yield* decodeWithFfmpeg(path, { ...options, probe: options.probe ?? wav?.probe ?? (await probeAudio(path)), blockFrames });
}

/** decodeToPcm through ffmpeg, whatever the input (exported for the test that holds the WAV path to it). */
export async function* decodeWithFfmpeg(
  path: string,
  options: DecodeToPcmOptions & { probe: AudioProbe; blockFrames: number },
): AsyncGenerator<Float32Array, void, undefined> {
  const { sampleRate, signal, probe, blockFrames } = options;
  const filters: string[] = [];
  if (probe.channels === 1) filters.push("pan=stereo|c0=c0|c1=c0");
  filters.push(`aresample=${sampleRate}:resampler=soxr`);

  // Never let the stream close on its own (autoDestroy, destroyOnReturn):
  // fluent-ffmpeg reports a closed output stream as a failure when the process
  // has not been reaped 20 ms later, which happens on a loaded machine.
  // ffmpeg decodes up to PIPE_BUFFER_BYTES ahead, so the consumer rarely waits for it
  const pcm = new PassThrough({ highWaterMark: PIPE_BUFFER_BYTES, autoDestroy: false });
  pcm.on("error", () => {});
  const command = ffmpeg(path)
    .inputOptions(["-nostdin", "-hide_banner"])
    .outputOptions(["-map", "0:a:0", "-vn", "-sn", "-dn", "-af", filters.join(","), "-ac", "2", "-c:a", "pcm_f32le"])
    .format("f32le")
    .output(pcm, { end: true });
  const decoder = startFfmpeg(command, (err) => {
    pcm.destroy(signal?.aborted ? (signal.reason as Error) : new AudioDecodeError(path, err.message, { cause: err }));
  });
  const onAbort = () => decoder.kill();
  signal?.addEventListener("abort", onAbort, { once: true });

  const blockBytes = blockFrames * 8;
  let block = new Float32Array(blockFrames * 2);
  let bytes = new Uint8Array(block.buffer);
  let filled = 0;
  let finished = false;
  try {
    for await (const chunk of pcm.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      let offset = 0;
      while (offset < chunk.length) {
        const n = Math.min(blockBytes - filled, chunk.length - offset);
        bytes.set(chunk.subarray(offset, offset + n), filled);
        filled += n;
        offset += n;
        if (filled === blockBytes) {
          yield block;
          block = new Float32Array(blockFrames * 2);
          bytes = new Uint8Array(block.buffer);
          filled = 0;
        }
      }
    }
    try {
      await decoder.exited;
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw new AudioDecodeError(path, (err as Error).message, { cause: err });
    }
    finished = true;
    const frames = Math.floor(filled / 8);
    if (frames > 0) yield block.subarray(0, frames * 2);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    if (!finished) decoder.kill();
  }
}

/**
 * Whether ffmpeg's decode of this WAV is its samples as they are: one channel (copied to both), or
 * two that are left and right (no speaker mask, or FL+FR). Two other speakers (FC+LFE, say) ffmpeg
 * would remix to stereo, and more than two it downmixes.
 */
function readsAsIs(wav: WavLayout): boolean {
  const { channels } = wav.probe;
  return channels === 1 || (channels === 2 && (wav.channelMask === 0 || wav.channelMask === 0x3));
}

/** Reads one sample as float32 from `view` at `at`, as ffmpeg's decoder and converter give it. */
function sampleReader(codec: string): ((view: DataView, at: number) => number) | undefined {
  switch (codec) {
    case "pcm_u8":
      return (v, at) => (v.getUint8(at) - 128) / 128;
    case "pcm_s16le":
      return (v, at) => v.getInt16(at, true) / 32768;
    case "pcm_s24le":
      return (v, at) => (v.getUint8(at) | (v.getUint8(at + 1) << 8) | (v.getInt8(at + 2) << 16)) / 8388608;
    case "pcm_s32le":
      return (v, at) => v.getInt32(at, true) / 2147483648;
    case "pcm_f32le":
      return (v, at) => v.getFloat32(at, true);
    case "pcm_f64le":
      return (v, at) => v.getFloat64(at, true);
    default:
      return undefined;
  }
}

/** decodeToPcm for a plain one- or two-channel PCM WAV file at the wanted rate. */
async function* readWavPcm(
  path: string,
  wav: WavLayout,
  blockFrames: number,
  signal: AbortSignal | undefined,
): AsyncGenerator<Float32Array, void, undefined> {
  const read = sampleReader(wav.probe.codec);
  if (!read) throw new AudioDecodeError(path, `unsupported WAV sample format ${wav.probe.codec}`);
  const { channels } = wav.probe;
  const bytesPerSample = wav.blockAlign / channels;
  const handle = await open(path, "r");
  // as the ffmpeg path kills its process: an abort closes the file even if the consumer never
  // resumes or returns this generator
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= handle.close());
  const onAbort = () => void close().catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const bytes = new Uint8Array(blockFrames * wav.blockAlign);
    const view = new DataView(bytes.buffer);
    let position = wav.dataOffset;
    let left = wav.dataBytes;
    while (left > 0) {
      signal?.throwIfAborted();
      const want = Math.min(bytes.length, left);
      let got = 0;
      while (got < want) {
        const { bytesRead } = await handle.read(bytes, got, want - got, position + got).catch((err: unknown) => {
          throw signal?.aborted ? signal.reason : err;
        });
        if (bytesRead === 0) throw new AudioDecodeError(path, "the WAV file ends before its data chunk does");
        got += bytesRead;
      }
      position += got;
      left -= got;
      const frames = got / wav.blockAlign;
      const block = new Float32Array(frames * 2);
      for (let f = 0, at = 0; f < frames; f++, at += wav.blockAlign) {
        const l = read(view, at);
        block[2 * f] = l;
        block[2 * f + 1] = channels === 2 ? read(view, at + bytesPerSample) : l;
      }
      yield block;
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await close();
  }
}
