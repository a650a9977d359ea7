import { PassThrough } from "node:stream";
import ffmpeg from "fluent-ffmpeg";
import { AudioDecodeError } from "./errors.ts";
import { PIPE_BUFFER_BYTES, startFfmpeg } from "./ffmpeg-process.ts";
import { probeAudio, type AudioProbe } from "./probe-audio.ts";

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
 * Each yielded block is a new array the consumer may keep.
 */
export async function* decodeToPcm(path: string, options: DecodeToPcmOptions): AsyncGenerator<Float32Array, void, undefined> {
  const { sampleRate, signal } = options;
  const blockFrames = options.blockFrames ?? 32768;
  if (!Number.isInteger(sampleRate) || sampleRate <= 0) throw new RangeError(`invalid sampleRate ${sampleRate}`);
  if (!Number.isInteger(blockFrames) || blockFrames <= 0) throw new RangeError(`invalid blockFrames ${blockFrames}`);
  signal?.throwIfAborted();
  const probe = options.probe ?? (await probeAudio(path));

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
