import { open, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { decodeToPcm } from "@mixdown/audio";

/**
 * A file of float samples, `channels` to a frame, read and written at any frame: the passes
 * over a long track go through these instead of memory, so memory stays flat in its length.
 */
export class SampleFile {
  readonly path: string;
  readonly channels: number;
  readonly bytesPerSample: 4 | 8;
  frames = 0;
  readonly #handle: FileHandle;

  private constructor(handle: FileHandle, path: string, channels: number, bytesPerSample: 4 | 8) {
    this.#handle = handle;
    this.path = path;
    this.channels = channels;
    this.bytesPerSample = bytesPerSample;
  }

  static async create(dir: string, name: string, channels: number, bytesPerSample: 4 | 8): Promise<SampleFile> {
    const path = join(dir, name);
    return new SampleFile(await open(path, "w+"), path, channels, bytesPerSample);
  }

  /**
   * Decodes `path` into a float32 stereo file at `sampleRate` (mono copied to both channels, more
   * than two downmixed, another rate resampled with soxr: `decodeToPcm`).
   */
  static async decode(path: string, dir: string, name: string, sampleRate: number, signal?: AbortSignal): Promise<SampleFile> {
    const file = await SampleFile.create(dir, name, 2, 4);
    try {
      let frame = 0;
      for await (const block of decodeToPcm(path, { sampleRate, signal })) {
        await file.writeFloat32(frame, block);
        frame += block.length / 2;
      }
      return file;
    } catch (err) {
      await file.close();
      throw err;
    }
  }

  async writeFloat32(frame: number, samples: Float32Array): Promise<void> {
    if (this.bytesPerSample !== 4) throw new TypeError("not a float32 file");
    await this.#write(frame, new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength), samples.length);
  }

  async writeFloat64(frame: number, samples: Float64Array): Promise<void> {
    if (this.bytesPerSample !== 8) throw new TypeError("not a float64 file");
    await this.#write(frame, new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength), samples.length);
  }

  async #write(frame: number, bytes: Uint8Array, samples: number): Promise<void> {
    const position = frame * this.channels * this.bytesPerSample;
    let done = 0;
    while (done < bytes.length) {
      const { bytesWritten } = await this.#handle.write(bytes, done, bytes.length - done, position + done);
      done += bytesWritten;
    }
    this.frames = Math.max(this.frames, frame + samples / this.channels);
  }

  /** Frames [start, start + count) as float64, interleaved; frames outside the file read as 0. */
  async read(start: number, count: number): Promise<Float64Array> {
    const out = new Float64Array(count * this.channels);
    const from = Math.max(0, start);
    const to = Math.min(this.frames, start + count);
    if (to <= from) return out;
    const samples = (to - from) * this.channels;
    const bytes = new Uint8Array(samples * this.bytesPerSample);
    let done = 0;
    const position = from * this.channels * this.bytesPerSample;
    while (done < bytes.length) {
      const { bytesRead } = await this.#handle.read(bytes, done, bytes.length - done, position + done);
      if (bytesRead === 0) throw new Error(`${this.path} ended early`);
      done += bytesRead;
    }
    const values = this.bytesPerSample === 4 ? new Float32Array(bytes.buffer) : new Float64Array(bytes.buffer);
    out.set(values, (from - start) * this.channels);
    return out;
  }

  async close(): Promise<void> {
    await this.#handle.close();
  }
}
