import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { readMono as readMonoAt } from "../src/index.ts";

export const run = promisify(execFile);
export const voicesDir = fileURLToPath(new URL("../../../models/voices/", import.meta.url));

let root: string | undefined;

/**
 * A fresh directory under this test process's own scratch folder, which goes when the process exits
 * (devstack's testFilesDir, by hand: devstack depends on db, which depends on this package).
 */
export async function tempDir(): Promise<string> {
  if (root === undefined) {
    const dir = mkdtempSync(join(tmpdir(), "mixdown-voice-test-"));
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    root = dir;
  }
  return mkdtemp(join(root, "t-"));
}

/** espeak-ng speech as a 44.1 kHz file; extra ffmpeg output args allowed. */
export async function speech(voice: string, text: string, outputArgs: string[] = []): Promise<string> {
  const dir = await tempDir();
  const raw = join(dir, "raw.wav");
  await run("espeak-ng", ["-v", voice, "-s", "150", "-w", raw, text]);
  const path = join(dir, "speech.wav");
  await run("ffmpeg", ["-v", "error", "-y", "-i", raw, "-ar", "44100", ...outputArgs, path]);
  return path;
}

export function readMono(path: string, sampleRate = 16000): Promise<Float32Array> {
  return readMonoAt(path, sampleRate);
}

/** RMS envelope in dB, `frame` samples per value. */
export function rmsEnvelopeDb(signal: Float32Array, frame: number): Float64Array {
  const out = new Float64Array(Math.floor(signal.length / frame));
  for (let f = 0; f < out.length; f++) {
    let s = 0;
    for (let i = 0; i < frame; i++) s += signal[f * frame + i]! ** 2;
    out[f] = 10 * Math.log10(s / frame + 1e-12);
  }
  return out;
}

export const SENTENCE = "Music is the space between the notes, and the breath between the words we sing.";
