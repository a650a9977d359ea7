// Shared by the evaluation scripts (eval.ts, eval-blend.ts): the recipe of the default voices with
// its held-out speech, espeak-ng synthesis, decoding to 16 kHz mono, and the timbre measure.
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { mfccMean, readMono } from "../src/index.ts";

const run = promisify(execFile);

export const modelsDir = fileURLToPath(new URL("../../../models/", import.meta.url));

export interface VoiceRecipe {
  speed: number;
  voices: Array<{ slug: string; gender: string }>;
  /** espeak-ng voices and texts that never built a default voice. */
  heldOut: { voices: string[]; texts: string[] };
}

export async function readRecipe(): Promise<VoiceRecipe> {
  return JSON.parse(await readFile(join(modelsDir, "voices", "recipe.json"), "utf8")) as VoiceRecipe;
}

/** Genders of the held-out espeak-ng voices. */
export const heldOutGenders: Record<string, string> = {
  "en+m1": "male",
  "en-us+m2": "male",
  "en+f1": "female",
  "en+f5": "female",
};

/** A file decoded to mono float32 at 16 kHz. */
export function readMono16k(path: string): Promise<Float32Array> {
  return readMono(path, 16000);
}

/** espeak-ng speech of `text` in `voice`, written to `<dir>/<name>.wav`. */
export async function speak(dir: string, speed: number, voice: string, text: string, name: string): Promise<string> {
  const path = join(dir, `${name}.wav`);
  await run("espeak-ng", ["-v", voice, "-s", String(speed), "-w", path, text]);
  return path;
}

/** Mean MFCC (c1..c12) of a file, read at 16 kHz: the timbre figure the evaluations compare. */
export async function mfccOfFile(path: string): Promise<Float64Array> {
  return mfccMean(await readMono16k(path), 16000);
}
