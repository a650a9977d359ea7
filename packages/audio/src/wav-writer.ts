import { open, rm, type FileHandle } from "node:fs/promises";
import type { WavSampleFormat } from "./encode-pcm.ts";
import { WAVE_FORMAT_EXTENSIBLE, WAVE_FORMAT_IEEE_FLOAT, WAVE_FORMAT_PCM } from "./wav-header.ts";

/** KSDATAFORMAT_SUBTYPE_* after the format tag's two bytes: 0000-0010-8000-00aa00389b71 */
const SUBTYPE_TAIL = Buffer.from([0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71]);
const FRONT_LEFT_RIGHT = 0x3;
const UINT32_MAX = 0xffff_ffff;
/** Converted samples are written in pieces of this many frames (a 1.5 MB block stays whole as f32). */
const PIECE_FRAMES = 1 << 16;

const BYTES: Record<WavSampleFormat, number> = { f32: 4, s16: 2, s24: 3 };

/**
 * The header ffmpeg's WAV muxer writes for stereo PCM (`-rf64 auto`), without its LIST/INFO chunk
 * naming the encoder: RIFF, a 28-byte JUNK chunk that becomes `ds64` when the file outgrows
 * 4 GiB (RF64), `fmt ` (WAVE_FORMAT_EXTENSIBLE, front left and right, for more than 16 bits),
 * `fact` (the frame count) for float, then the data chunk's header. Sizes are filled in by
 * `patchHeader` once the length is known.
 */
function header(sampleFormat: WavSampleFormat, sampleRate: number): { bytes: Buffer; factAt?: number } {
  const width = BYTES[sampleFormat];
  const blockAlign = 2 * width;
  const extensible = width > 2;
  const fmtLength = extensible ? 40 : 16;
  const fact = sampleFormat === "f32";
  const bytes = Buffer.alloc(12 + 36 + 8 + fmtLength + (fact ? 12 : 0) + 8);
  let at = 0;
  const tag = (id: string) => {
    bytes.write(id, at, "latin1");
    at += 4;
  };
  const u32 = (v: number) => {
    bytes.writeUInt32LE(v, at);
    at += 4;
  };
  const u16 = (v: number) => {
    bytes.writeUInt16LE(v, at);
    at += 2;
  };
  tag("RIFF");
  u32(0);
  tag("WAVE");
  tag("JUNK");
  u32(28);
  at += 28;
  tag("fmt ");
  u32(fmtLength);
  const formatTag = sampleFormat === "f32" ? WAVE_FORMAT_IEEE_FLOAT : WAVE_FORMAT_PCM;
  u16(extensible ? WAVE_FORMAT_EXTENSIBLE : formatTag);
  u16(2);
  u32(sampleRate);
  u32(sampleRate * blockAlign);
  u16(blockAlign);
  u16(8 * width);
  if (extensible) {
    u16(22);
    u16(8 * width);
    u32(FRONT_LEFT_RIGHT);
    u16(formatTag);
    SUBTYPE_TAIL.copy(bytes, at);
    at += SUBTYPE_TAIL.length;
  }
  let factAt: number | undefined;
  if (fact) {
    tag("fact");
    u32(4);
    factAt = at;
    u32(0);
  }
  tag("data");
  u32(0);
  return { bytes, ...(factAt !== undefined ? { factAt } : {}) };
}

/**
 * Float samples to the file's format with ffmpeg's own conversions (libswresample): s16 is
 * `clip(lrintf(x · 2^15))`, s24 is s32's `clip(llrintf(x · 2^31))` shifted down 8 bits by the
 * pcm_s24le encoder. lrintf rounds half to even, as the double trick below does (exact here:
 * x · 2^k is exact and far below 2^51).
 */
function convert(samples: Float32Array, sampleFormat: WavSampleFormat): Buffer {
  if (sampleFormat === "f32") return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const out = Buffer.allocUnsafe(samples.length * BYTES[sampleFormat]);
  const ROUND = 6755399441055744; // 1.5 · 2^52: adding and subtracting it rounds half to even
  if (sampleFormat === "s16") {
    for (let i = 0; i < samples.length; i++) {
      const v = samples[i]! * 32768 + ROUND - ROUND;
      out.writeInt16LE(v > 32767 ? 32767 : v < -32768 ? -32768 : v, 2 * i);
    }
  } else {
    for (let i = 0; i < samples.length; i++) {
      const v = samples[i]! * 2147483648 + ROUND - ROUND;
      const s32 = v > 2147483647 ? 2147483647 : v < -2147483648 ? -2147483648 : v;
      out.writeIntLE(Math.floor(s32 / 256), 3 * i, 3);
    }
  }
  return out;
}

export interface WavFileWriterOptions {
  path: string;
  sampleRate: number;
  /** default f32 */
  sampleFormat?: WavSampleFormat;
  /** exact length in frames: later frames are dropped, missing ones written as silence */
  frames?: number;
  /** RIFF size above which the file becomes RF64 (for tests; default 4 GiB − 1) */
  rf64Above?: number;
}

/**
 * Writes interleaved stereo float32 blocks to a WAV file from this process: the file
 * `StereoPcmEncoder` would have ffmpeg write, sample for sample, without a process and a pipe
 * per file. The header is written first with zero sizes and filled in by `finish`.
 */
export class WavFileWriter {
  readonly path: string;
  readonly #sampleFormat: WavSampleFormat;
  readonly #frames: number | undefined;
  readonly #rf64Above: number;
  readonly #header: { bytes: Buffer; factAt?: number };
  readonly #handle: Promise<FileHandle>;
  #position: number;
  #framesWritten = 0;

  constructor(options: WavFileWriterOptions) {
    this.path = options.path;
    this.#sampleFormat = options.sampleFormat ?? "f32";
    this.#frames = options.frames;
    this.#rf64Above = options.rf64Above ?? UINT32_MAX;
    this.#header = header(this.#sampleFormat, options.sampleRate);
    this.#position = this.#header.bytes.length;
    this.#handle = open(this.path, "w").then(async (handle) => {
      await handle.write(this.#header.bytes, 0, this.#header.bytes.length, 0);
      return handle;
    });
    this.#handle.catch(() => {}); // seen by the first write or finish
  }

  /** Appends one block (interleaved stereo); resolves once it is written. */
  async write(block: Float32Array): Promise<void> {
    const handle = await this.#handle;
    let frames = block.length / 2;
    if (this.#frames !== undefined) frames = Math.max(0, Math.min(frames, this.#frames - this.#framesWritten));
    for (let at = 0; at < frames; at += PIECE_FRAMES) {
      const n = Math.min(PIECE_FRAMES, frames - at);
      await this.#append(handle, convert(block.subarray(2 * at, 2 * (at + n)), this.#sampleFormat));
    }
    this.#framesWritten += frames;
  }

  /** Pads to `frames` if asked, fills in the sizes and closes the file. */
  async finish(): Promise<void> {
    const handle = await this.#handle;
    try {
      if (this.#frames !== undefined && this.#framesWritten < this.#frames) {
        // write() stops at `frames`, so whole pieces of silence pad exactly
        const silence = new Float32Array(2 * Math.min(PIECE_FRAMES, this.#frames - this.#framesWritten));
        while (this.#framesWritten < this.#frames) await this.write(silence);
      }
      await this.#patchHeader(handle);
    } finally {
      await handle.close();
    }
  }

  /** Closes and removes the file. */
  async abort(): Promise<void> {
    const handle = await this.#handle.catch(() => undefined);
    await handle?.close().catch(() => {});
    await rm(this.path, { force: true });
  }

  async #append(handle: FileHandle, bytes: Buffer): Promise<void> {
    let done = 0;
    while (done < bytes.length) {
      const { bytesWritten } = await handle.write(bytes, done, bytes.length - done, this.#position);
      done += bytesWritten;
      this.#position += bytesWritten;
    }
  }

  async #patchHeader(handle: FileHandle): Promise<void> {
    const bytes = Buffer.from(this.#header.bytes);
    const dataBytes = this.#framesWritten * 2 * BYTES[this.#sampleFormat];
    const riffBytes = bytes.length - 8 + dataBytes;
    const rf64 = riffBytes > this.#rf64Above;
    // as ffmpeg: the fact and data sizes are 2^32 − 1 in an RF64 file, ds64 has the real ones
    if (this.#header.factAt !== undefined) bytes.writeUInt32LE(rf64 ? UINT32_MAX : this.#framesWritten, this.#header.factAt);
    bytes.writeUInt32LE(rf64 ? UINT32_MAX : dataBytes, bytes.length - 4);
    if (rf64) {
      bytes.write("RF64", 0, "latin1");
      bytes.writeUInt32LE(UINT32_MAX, 4);
      bytes.write("ds64", 12, "latin1");
      bytes.writeBigUInt64LE(BigInt(riffBytes), 20);
      bytes.writeBigUInt64LE(BigInt(dataBytes), 28);
      bytes.writeBigUInt64LE(BigInt(this.#framesWritten), 36);
      bytes.writeUInt32LE(0, 44);
    } else {
      bytes.writeUInt32LE(riffBytes, 4);
    }
    await handle.write(bytes, 0, bytes.length, 0);
  }
}
