import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeToPcm, encodeStereoPcm, type EncodeTarget } from "@mixdown/audio";

export interface Stereo {
  left: Float32Array;
  right: Float32Array;
}

export function tones(
  frames: number,
  sampleRate: number,
  parts: { freq: number; amp: number; phase?: number }[],
  dc = 0,
): Float32Array {
  const out = new Float32Array(frames);
  for (let i = 0; i < frames; i++) {
    let v = dc;
    for (const p of parts) v += p.amp * Math.sin((2 * Math.PI * p.freq * i) / sampleRate + (p.phase ?? 0));
    out[i] = v;
  }
  return out;
}

/** Writes planar stereo to a file (default float WAV) through the audio package's encoder. */
export async function writeStereo(
  path: string,
  signal: Stereo,
  sampleRate: number,
  target: Partial<EncodeTarget> = {},
): Promise<void> {
  async function* blocks() {
    for (let at = 0; at < signal.left.length; at += 4096) {
      const n = Math.min(4096, signal.left.length - at);
      const block = new Float32Array(2 * n);
      for (let i = 0; i < n; i++) {
        block[2 * i] = signal.left[at + i];
        block[2 * i + 1] = signal.right[at + i];
      }
      yield block;
    }
  }
  await encodeStereoPcm(blocks(), { inputSampleRate: sampleRate, targets: [{ format: "wav", ...target, path } as EncodeTarget] });
}

export async function readStereo(path: string, sampleRate: number): Promise<Stereo> {
  const left: number[] = [];
  const right: number[] = [];
  for await (const block of decodeToPcm(path, { sampleRate })) {
    for (let i = 0; i < block.length; i += 2) {
      left.push(block[i]);
      right.push(block[i + 1]);
    }
  }
  return { left: Float32Array.from(left), right: Float32Array.from(right) };
}

/** 10·log10(Σref² / Σ(ref−est)²) over both channels (or over one array of samples). */
export function snrDb<T extends Stereo | Float32Array>(ref: T, est: T): number {
  let signal = 0;
  let noise = 0;
  const pairs: Array<readonly [Float32Array, Float32Array]> =
    ref instanceof Float32Array
      ? [[ref, est as Float32Array]]
      : [
          [ref.left, (est as Stereo).left],
          [ref.right, (est as Stereo).right],
        ];
  for (const [a, b] of pairs) {
    if (a.length !== b.length) throw new Error(`length ${b.length} != ${a.length}`);
    for (let i = 0; i < a.length; i++) {
      signal += a[i] * a[i];
      noise += (a[i] - b[i]) ** 2;
    }
  }
  return 10 * Math.log10(signal / Math.max(noise, 1e-30));
}

export function maxAbs(x: Float32Array): number {
  let m = 0;
  for (const v of x) m = Math.max(m, Math.abs(v));
  return m;
}

export function scaled(x: Stereo, gain: number): Stereo {
  return { left: x.left.map((v) => v * gain), right: x.right.map((v) => v * gain) };
}

export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "mixdown-separation-test-"));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Raised-cosine fade in and out over `frames`, so the song's edges add no content to the zeroed low bins. */
export function faded(x: Float32Array, frames: number): Float32Array {
  const out = x.slice();
  const n = Math.min(frames, Math.floor(out.length / 2));
  for (let i = 0; i < n; i++) {
    const g = 0.5 - 0.5 * Math.cos((Math.PI * i) / n);
    out[i] *= g;
    out[out.length - 1 - i] *= g;
  }
  return out;
}
