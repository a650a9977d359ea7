// Builds the default native voices and instrument models from models/voices/recipe.json:
//   pnpm --filter @mixdown/voice exec tsx scripts/build-voices.ts
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { buildNativeVoiceModel } from "../src/native/build.ts";
import { NATIVE_LAYOUT } from "../src/native/layout.ts";
import { buildInstrumentModel, type InstrumentRecipe } from "./soundfont.ts";

const run = promisify(execFile);
const voicesDir = fileURLToPath(new URL("../../../models/voices/", import.meta.url));

interface Recipe {
  speed: number;
  texts: string[];
  voices: Array<{ slug: string; title: string; espeak: string; gender: string; tags: string[] }>;
  instruments: InstrumentRecipe;
}

export async function speak(voice: string, text: string, speed: number, path: string): Promise<void> {
  await run("espeak-ng", ["-v", voice, "-s", String(speed), "-w", path, text]);
}

const recipe = JSON.parse(await readFile(join(voicesDir, "recipe.json"), "utf8")) as Recipe;
const dir = await mkdtemp(join(tmpdir(), "mixdown-voices-"));
const manifest = [];

/** Writes a built model next to the recipe and returns its manifest fields. */
async function save(slug: string, { onnx, activeSeconds }: { onnx: Uint8Array; activeSeconds: number }) {
  await writeFile(join(voicesDir, `${slug}.onnx`), onnx);
  const fields = {
    architecture: "native",
    sampleRate: NATIVE_LAYOUT.sampleRate,
    file: `voices/${slug}.onnx`,
    sha256: createHash("sha256").update(onnx).digest("hex"),
  };
  return { fields, note: `${onnx.length} bytes from ${activeSeconds.toFixed(1)} s` };
}

try {
  for (const voice of recipe.voices) {
    const paths: string[] = [];
    for (const [i, text] of recipe.texts.entries()) {
      const path = join(dir, `${voice.slug}-${i}.wav`);
      await speak(voice.espeak, text, recipe.speed, path);
      paths.push(path);
    }
    const { fields, note } = await save(voice.slug, await buildNativeVoiceModel(paths, voice));
    manifest.push({
      slug: voice.slug,
      title: voice.title,
      tags: voice.tags,
      ...fields,
      espeak: voice.espeak,
      gender: voice.gender,
    });
    console.log(`${voice.slug}: ${note} of ${voice.espeak}`);
  }
  for (const instrument of recipe.instruments.items) {
    const { fields, note } = await save(instrument.slug, await buildInstrumentModel(instrument, recipe.instruments, dir));
    manifest.push({
      slug: instrument.slug,
      title: instrument.title,
      tags: instrument.tags,
      ...fields,
      instrument: true,
      gmProgram: instrument.program,
    });
    console.log(`${instrument.slug}: ${note} of General MIDI program ${instrument.program}`);
  }
  await writeFile(join(voicesDir, "manifest.json"), `${JSON.stringify({ voices: manifest }, null, 2)}\n`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
