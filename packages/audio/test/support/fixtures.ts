import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { decodeToPcm } from "../../src/index.ts";

const run = promisify(execFile);

export interface ToneSpec {
  sampleRate: number;
  channels: number;
  frames: number;
  /** ffmpeg output arguments choosing the codec, e.g. ['-c:a', 'flac'] */
  codecArgs?: string[];
}

/** Frequency and amplitude of the tone written to channel `c`. */
export function toneOf(channel: number): { freq: number; amp: number } {
  return { freq: 440 + 110 * channel, amp: 0.5 - 0.05 * channel };
}

/** Writes a file of one distinct sine per channel, exactly `frames` long, with ffmpeg's lavfi. */
export async function writeTone(path: string, spec: ToneSpec): Promise<void> {
  const exprs = Array.from({ length: spec.channels }, (_, c) => {
    const { freq, amp } = toneOf(c);
    return `${amp}*sin(2*PI*${freq}*t)`;
  }).join("|");
  await run("ffmpeg", [
    "-v",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    `aevalsrc=exprs=${exprs}:s=${spec.sampleRate}:d=${spec.frames / spec.sampleRate + 0.1}`,
    "-af",
    `atrim=end_sample=${spec.frames}`,
    ...(spec.codecArgs ?? []),
    path,
  ]);
}

/** Decodes a whole (short) file to planar channels at `sampleRate`. */
export async function readStereo(path: string, sampleRate: number): Promise<{ left: Float32Array; right: Float32Array }> {
  const blocks: Float32Array[] = [];
  let frames = 0;
  for await (const block of decodeToPcm(path, { sampleRate })) {
    blocks.push(block);
    frames += block.length / 2;
  }
  const left = new Float32Array(frames);
  const right = new Float32Array(frames);
  let at = 0;
  for (const block of blocks) {
    for (let i = 0; i < block.length / 2; i++) {
      left[at + i] = block[2 * i];
      right[at + i] = block[2 * i + 1];
    }
    at += block.length / 2;
  }
  return { left, right };
}

/** 10·log10(Σref² / Σ(ref−est)²) over [from, to). */
export function snrDb(ref: ArrayLike<number>, est: ArrayLike<number>, from = 0, to = ref.length): number {
  let signal = 0;
  let noise = 0;
  for (let i = from; i < to; i++) {
    signal += ref[i] * ref[i];
    const d = ref[i] - est[i];
    noise += d * d;
  }
  return 10 * Math.log10(signal / Math.max(noise, 1e-30));
}

export function sine(frames: number, sampleRate: number, freq: number, amp: number): Float32Array {
  const out = new Float32Array(frames);
  for (let i = 0; i < frames; i++) out[i] = amp * Math.sin((2 * Math.PI * freq * i) / sampleRate);
  return out;
}

export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "mixdown-audio-test-"));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function ffprobeField(path: string, entry: string): Promise<string> {
  const { stdout } = await run("ffprobe", [
    "-v",
    "error",
    "-select_streams",
    "a:0",
    "-show_entries",
    entry,
    "-of",
    "default=nw=1:nk=1",
    path,
  ]);
  return stdout.trim();
}
