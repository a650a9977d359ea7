import { open } from "node:fs/promises";
import type { AudioProbe } from "./probe-audio.ts";

/** Bytes read from the start of the file: enough for fmt, LIST/bext chunks and the data header. */
const HEAD_BYTES = 1 << 16;
export const WAVE_FORMAT_PCM = 1;
export const WAVE_FORMAT_IEEE_FLOAT = 3;
export const WAVE_FORMAT_EXTENSIBLE = 0xfffe;

function codecName(format: number, bits: number): string | undefined {
  if (format === WAVE_FORMAT_PCM) {
    if (bits === 8) return "pcm_u8";
    if (bits === 16 || bits === 24 || bits === 32) return `pcm_s${bits}le`;
  }
  if (format === WAVE_FORMAT_IEEE_FLOAT && (bits === 32 || bits === 64)) return `pcm_f${bits}le`;
  return undefined;
}

/** Where a plain PCM WAV file's samples are and how they are stored. */
export interface WavLayout {
  probe: AudioProbe;
  /** byte offset of the first sample */
  dataOffset: number;
  /** bytes of samples (frames × blockAlign) */
  dataBytes: number;
  /** bytes per frame */
  blockAlign: number;
  /** WAVE_FORMAT_EXTENSIBLE's speaker mask (0: none given, and for plain PCM) */
  channelMask: number;
}

/**
 * The probe of a plain RIFF/WAVE file with integer or float PCM, read from its
 * header in a few microseconds instead of an ffprobe run (a process start,
 * tens of milliseconds). Anything unusual (RF64, a compressed codec, a data
 * size that disagrees with the file size, a header past the first 64 KiB)
 * gives undefined, and the caller asks ffprobe.
 */
export async function probeWavHeader(path: string): Promise<AudioProbe | undefined> {
  return (await readWavLayout(path))?.probe;
}

export interface WavLayoutOptions {
  /**
   * The file was written as a stream (espeak-ng, a pipe) and its data size may be a placeholder:
   * a size of 0 or one past the end of the file means the rest of the file, cut to whole frames.
   * Without it such a file gives undefined (and goes to ffprobe).
   */
  streamed?: boolean;
}

/** probeWavHeader's reading, with where the samples lie (for reading them without ffmpeg). */
export async function readWavLayout(path: string, options: WavLayoutOptions = {}): Promise<WavLayout | undefined> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch {
    return undefined;
  }
  try {
    const { size } = await handle.stat();
    const head = Buffer.alloc(Math.min(HEAD_BYTES, size));
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    if (bytesRead < 44 || head.toString("latin1", 0, 4) !== "RIFF" || head.toString("latin1", 8, 12) !== "WAVE") return undefined;
    let fmt:
      { format: number; channels: number; sampleRate: number; blockAlign: number; bits: number; channelMask: number } | undefined;
    let at = 12;
    while (at + 8 <= bytesRead) {
      const id = head.toString("latin1", at, at + 4);
      const length = head.readUInt32LE(at + 4);
      const body = at + 8;
      if (id === "fmt ") {
        if (length < 16 || body + length > bytesRead) return undefined;
        let format = head.readUInt16LE(body);
        let channelMask = 0;
        const channels = head.readUInt16LE(body + 2);
        const sampleRate = head.readUInt32LE(body + 4);
        const blockAlign = head.readUInt16LE(body + 12);
        const bits = head.readUInt16LE(body + 14);
        if (format === WAVE_FORMAT_EXTENSIBLE) {
          // the sub-format GUID's first two bytes carry the real format tag
          if (length < 40) return undefined;
          if (head.readUInt16LE(body + 16) >= 22 && head.readUInt16LE(body + 18) !== bits) return undefined;
          channelMask = head.readUInt32LE(body + 20);
          format = head.readUInt16LE(body + 24);
        }
        fmt = { format, channels, sampleRate, blockAlign, bits, channelMask };
      } else if (id === "data") {
        if (!fmt) return undefined;
        const codec = codecName(fmt.format, fmt.bits);
        const { channels, sampleRate, blockAlign, bits } = fmt;
        if (!codec || channels < 1 || sampleRate < 1 || blockAlign !== (channels * bits) / 8) return undefined;
        let dataBytes = length;
        if (options.streamed && (length === 0 || body + length > size)) {
          dataBytes = size - body - ((size - body) % blockAlign);
        } else if (body + length > size || length % blockAlign !== 0) {
          // a streamed WAV may carry a placeholder size: only trust an exact fit
          return undefined;
        }
        const frames = dataBytes / blockAlign;
        return {
          probe: {
            format: "wav",
            codec,
            sampleRate,
            channels,
            duration: frames / sampleRate,
            frames,
            framesExact: true,
            bitRate: sampleRate * channels * bits,
          },
          dataOffset: body,
          dataBytes,
          blockAlign,
          channelMask: fmt.channelMask,
        };
      }
      at = body + length + (length & 1);
    }
    return undefined;
  } finally {
    await handle.close();
  }
}
