import { once } from "node:events";
import { rm } from "node:fs/promises";
import { PassThrough } from "node:stream";
import ffmpeg from "fluent-ffmpeg";
import { AudioEncodeError } from "./errors.ts";
import { PIPE_BUFFER_BYTES, startFfmpeg, type FfmpegProcess } from "./ffmpeg-process.ts";
import { WavFileWriter } from "./wav-writer.ts";

export type WavSampleFormat = "f32" | "s16" | "s24";

/**
 * One file an encoder writes. A lossless target may have a `sampleRate` of its own (resampled with
 * soxr from the blocks' rate), else it is written at the encoder's `outputSampleRate`.
 */
export type EncodeTarget =
  | { format: "wav"; path: string; /** default f32: exact, never clips */ sampleFormat?: WavSampleFormat; sampleRate?: number }
  | {
      format: "flac";
      path: string;
      /** default 24 */
      bitDepth?: 16 | 24;
      /** ffmpeg's flac `-compression_level`, 0 (fastest) to 12 (smallest); default ffmpeg's (5) */
      compressionLevel?: number;
      sampleRate?: number;
    }
  | { format: "mp3"; path: string; /** libmp3lame CBR, default 320 */ bitrateKbps?: number };

export type EncodeFormat = EncodeTarget["format"];

export interface StereoEncoderOptions {
  /** rate of the blocks that will be written */
  inputSampleRate: number;
  /** rate of the files (default: inputSampleRate); resampled with soxr when it differs */
  outputSampleRate?: number;
  /**
   * Exact length of every file in frames at `outputSampleRate` (a target at a rate of its own:
   * this length at its rate, rounded): the resampled
   * stream is cut or padded with silence to it, so lossless outputs match the
   * original input to the sample. Leave unset when no resampling happens and
   * the written blocks already have the right length.
   */
  frames?: number;
  /** one or more files written from the same stream by one ffmpeg process */
  targets: EncodeTarget[];
  signal?: AbortSignal;
}

const WAV_CODEC: Record<WavSampleFormat, string> = { f32: "pcm_f32le", s16: "pcm_s16le", s24: "pcm_s24le" };

function codecOptions(target: EncodeTarget): { format: string; options: string[] } {
  switch (target.format) {
    case "wav":
      return { format: "wav", options: ["-c:a", WAV_CODEC[target.sampleFormat ?? "f32"], "-rf64", "auto"] };
    case "flac": {
      const level = target.compressionLevel;
      if (level !== undefined && !(Number.isInteger(level) && level >= 0 && level <= 12))
        throw new RangeError(`flac compression level must be 0..12, got ${level}`);
      // ffmpeg 5.1's FLAC encoder writes 24-bit samples from s32 input
      return {
        format: "flac",
        options: [
          "-c:a",
          "flac",
          "-sample_fmt",
          (target.bitDepth ?? 24) === 16 ? "s16" : "s32",
          ...(level !== undefined ? ["-compression_level", String(level)] : []),
        ],
      };
    }
    case "mp3": {
      const kbps = target.bitrateKbps ?? 320;
      if (!Number.isInteger(kbps) || kbps < 8 || kbps > 320) throw new RangeError(`mp3 bitrate must be 8..320 kbps, got ${kbps}`);
      return { format: "mp3", options: ["-c:a", "libmp3lame", "-b:a", `${kbps}k`] };
    }
  }
}

/** The rate a target is written at: its own, else the encoder's output rate. */
function targetRate(target: EncodeTarget, outputSampleRate: number): number {
  return (target.format !== "mp3" ? target.sampleRate : undefined) ?? outputSampleRate;
}

/** Where an encoder's blocks go: one ffmpeg process, or WAV files written from this process. */
interface PcmSink {
  write(block: Float32Array): Promise<void>;
  finish(): Promise<void>;
  /** Stops and removes the partial files. */
  abort(): Promise<void>;
}

/** All targets from one ffmpeg process, reading the blocks through a pipe. */
class FfmpegSink implements PcmSink {
  readonly #targets: readonly EncodeTarget[];
  readonly #input: PassThrough;
  readonly #ffmpeg: FfmpegProcess;

  constructor(options: StereoEncoderOptions, outputSampleRate: number) {
    const { inputSampleRate, targets, frames } = options;
    this.#targets = targets;
    // each output its own filters: a target at a rate of its own is resampled to it, and its
    // exact length is the encoder's at that rate
    const filtersOf = (target: EncodeTarget): string[] => {
      const rate = targetRate(target, outputSampleRate);
      const filters: string[] = [];
      if (rate !== inputSampleRate) filters.push(`aresample=${rate}:resampler=soxr`);
      if (frames !== undefined) {
        const length = rate === outputSampleRate ? frames : Math.round((frames * rate) / outputSampleRate);
        filters.push(`apad=whole_len=${length}`, `atrim=end_sample=${length}`);
      }
      return filters;
    };

    // room for a few of a separation's blocks (1.5 MB each), so the caller
    // goes back to its own work while ffmpeg drains the pipe
    this.#input = new PassThrough({ highWaterMark: PIPE_BUFFER_BYTES });
    const command = ffmpeg()
      .input(this.#input)
      .inputFormat("f32le")
      .inputOptions(["-hide_banner", "-ar", String(inputSampleRate), "-ac", "2"]);
    for (const target of targets) {
      const { format, options: codec } = codecOptions(target);
      const filters = filtersOf(target);
      command
        .output(target.path)
        .outputOptions(["-map", "0:a", ...(filters.length > 0 ? ["-af", filters.join(",")] : []), ...codec])
        .format(format);
    }
    this.#ffmpeg = startFfmpeg(command, () => {
      this.#input.destroy();
    });
  }

  async write(block: Float32Array): Promise<void> {
    this.#throwIfFailed();
    if (!this.#input.write(Buffer.from(block.buffer, block.byteOffset, block.byteLength))) {
      await Promise.race([once(this.#input, "drain"), this.#ffmpeg.exited]);
      this.#throwIfFailed();
    }
  }

  async finish(): Promise<void> {
    this.#input.end();
    await this.#ffmpeg.exited;
  }

  async abort(): Promise<void> {
    this.#ffmpeg.kill();
    this.#input.destroy();
    await this.#ffmpeg.exited.catch(() => {});
    await Promise.all(this.#targets.map((t) => rm(t.path, { force: true })));
  }

  #throwIfFailed(): void {
    if (this.#ffmpeg.failure) throw this.#ffmpeg.failure;
  }
}

/** WAV targets at the blocks' own rate: written from this process, no ffmpeg (see WavFileWriter). */
class WavSink implements PcmSink {
  readonly #writers: WavFileWriter[];

  constructor(targets: readonly (EncodeTarget & { format: "wav" })[], sampleRate: number, frames: number | undefined) {
    this.#writers = targets.map(
      (t) =>
        new WavFileWriter({
          path: t.path,
          sampleRate,
          ...(t.sampleFormat ? { sampleFormat: t.sampleFormat } : {}),
          ...(frames !== undefined ? { frames } : {}),
        }),
    );
  }

  async write(block: Float32Array): Promise<void> {
    await Promise.all(this.#writers.map((w) => w.write(block)));
  }

  async finish(): Promise<void> {
    await Promise.all(this.#writers.map((w) => w.finish()));
  }

  async abort(): Promise<void> {
    await Promise.all(this.#writers.map((w) => w.abort()));
  }
}

function allWav(targets: readonly EncodeTarget[]): targets is readonly (EncodeTarget & { format: "wav" })[] {
  return targets.every((t) => t.format === "wav");
}

/**
 * Writes a stream of interleaved stereo float32 blocks to one or more files
 * (WAV, FLAC, mp3) through a single ffmpeg process, so a lossless + lossy pair
 * costs one pipe and one resampling setup. WAV files at the blocks' own rate,
 * when every target is one, are written by this process instead (the same
 * samples, no process). `write` applies backpressure: await it before writing
 * the next block.
 */
export class StereoPcmEncoder {
  readonly targets: readonly EncodeTarget[];
  readonly #sink: PcmSink;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = () => void this.abort();
  #framesWritten = 0;
  #closed = false;
  #failure: Error | undefined;

  constructor(options: StereoEncoderOptions) {
    const { inputSampleRate, targets, frames, signal } = options;
    const outputSampleRate = options.outputSampleRate ?? inputSampleRate;
    if (targets.length === 0) throw new RangeError("at least one encode target is required");
    if (frames !== undefined && (!Number.isInteger(frames) || frames < 0)) throw new RangeError(`invalid frames ${frames}`);
    for (const target of targets) codecOptions(target); // checks an mp3 bitrate before anything starts
    signal?.throwIfAborted();
    this.targets = targets;
    this.#signal = signal;
    this.#sink =
      allWav(targets) &&
      outputSampleRate === inputSampleRate &&
      targets.every((t) => targetRate(t, outputSampleRate) === inputSampleRate)
        ? new WavSink(targets, inputSampleRate, frames)
        : new FfmpegSink(options, outputSampleRate);
    signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  /** frames written so far (at the input rate) */
  get framesWritten(): number {
    return this.#framesWritten;
  }

  /**
   * Queues one block and resolves once the pipe has room (or, for WAV written
   * here, once it is in the files). The block is sent as is, not copied: do
   * not change it before the returned promise settles.
   */
  async write(block: Float32Array): Promise<void> {
    this.#signal?.throwIfAborted();
    if (this.#closed) throw new AudioEncodeError("write after finish or abort");
    if (block.length % 2 !== 0) throw new RangeError("stereo blocks must hold an even number of samples");
    if (this.#failure) throw this.#failure;
    this.#framesWritten += block.length / 2;
    try {
      await this.#sink.write(block);
    } catch (err) {
      this.#failure ??= this.#encodeError(err);
      throw this.#failure;
    }
  }

  /** Ends the stream and waits until every file is complete. */
  async finish(): Promise<void> {
    if (this.#closed) throw new AudioEncodeError("encoder already finished or aborted");
    this.#closed = true;
    try {
      await this.#sink.finish();
    } catch (err) {
      throw this.#encodeError(err);
    } finally {
      this.#signal?.removeEventListener("abort", this.#onAbort);
    }
  }

  /** Stops the encoder (kills ffmpeg) and removes the partial files; resolves once they are gone. */
  async abort(): Promise<void> {
    this.#closed = true;
    this.#signal?.removeEventListener("abort", this.#onAbort);
    await this.#sink.abort();
  }

  #encodeError(err: unknown): Error {
    if (this.#signal?.aborted) return this.#signal.reason as Error;
    if (err instanceof AudioEncodeError) return err;
    const paths = this.targets.map((t) => t.path).join(", ");
    return new AudioEncodeError(`encoding ${paths} failed: ${(err as Error).message}`, { cause: err });
  }
}

/** Encodes a whole stream of interleaved stereo blocks; see `StereoPcmEncoder`. */
export async function encodeStereoPcm(blocks: AsyncIterable<Float32Array>, options: StereoEncoderOptions): Promise<void> {
  const encoder = new StereoPcmEncoder(options);
  try {
    for await (const block of blocks) await encoder.write(block);
    await encoder.finish();
  } catch (err) {
    await encoder.abort();
    throw err;
  }
}
