// Builds the default native voices from models/voices/recipe.json:
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

const run = promisify(execFile);
const voicesDir = fileURLToPath(new URL("../../../models/voices/", import.meta.url));

interface Recipe {
  speed: number;
  texts: string[];
  voices: Array<{ slug: string; title: string; espeak: string; gender: string; tags: string[] }>;
}

export async function speak(voice: string, text: string, speed: number, path: string): Promise<void> {
  await run("espeak-ng", ["-v", voice, "-s", String(speed), "-w", path, text]);
}

const recipe = JSON.parse(await readFile(join(voicesDir, "recipe.json"), "utf8")) as Recipe;
const dir = await mkdtemp(join(tmpdir(), "mixdown-voices-"));
const manifest = [];
try {
  for (const voice of recipe.voices) {
    const paths: string[] = [];
    for (const [i, text] of recipe.texts.entries()) {
      const path = join(dir, `${voice.slug}-${i}.wav`);
      await speak(voice.espeak, text, recipe.speed, path);
      paths.push(path);
    }
    const { onnx, activeSeconds } = await buildNativeVoiceModel(paths, { slug: voice.slug, title: voice.title });
    const file = `voices/${voice.slug}.onnx`;
    await writeFile(join(voicesDir, `${voice.slug}.onnx`), onnx);
    manifest.push({
      slug: voice.slug,
      title: voice.title,
      tags: voice.tags,
      architecture: "native",
      sampleRate: NATIVE_LAYOUT.sampleRate,
      file,
      sha256: createHash("sha256").update(onnx).digest("hex"),
      espeak: voice.espeak,
      gender: voice.gender,
    });
    console.log(`${voice.slug}: ${onnx.length} bytes from ${activeSeconds.toFixed(1)} s of ${voice.espeak}`);
  }
  await writeFile(join(voicesDir, "manifest.json"), `${JSON.stringify({ voices: manifest }, null, 2)}\n`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
