// The built-in voice catalogue (models/voices/manifest.json). Imports nothing heavy: the API
// registers the catalogue at start without loading the inference runtime.
import { readFile } from "node:fs/promises";
import { join } from "node:path";

export interface CatalogueVoice {
  slug: string;
  title: string;
  tags: string[];
  architecture: "native";
  sampleRate: number;
  /** Path relative to MODELS_DIR, e.g. `voices/native-aria.onnx`. */
  file: string;
  sha256: string;
  /** A voice: the espeak-ng voice it was built from, and its gender. */
  espeak?: string;
  gender?: string;
  /** An instrument model rather than a voice (absent: a voice). */
  instrument?: boolean;
  /** An instrument: the General MIDI program of the soundfont instrument it was built from. */
  gmProgram?: number;
}

/** fileKey of a built-in model: the `models:` scheme names a file under MODELS_DIR, not a storage key. */
export const BUILTIN_FILE_PREFIX = "models:";

export async function readVoiceCatalogue(modelsDir: string): Promise<CatalogueVoice[]> {
  const manifest = JSON.parse(await readFile(join(modelsDir, "voices", "manifest.json"), "utf8")) as { voices: CatalogueVoice[] };
  return manifest.voices;
}

/** The catalogue as VoiceModel rows to register (public, matched by slug). */
export async function catalogueRows(modelsDir: string) {
  return (await readVoiceCatalogue(modelsDir)).map((v) => ({
    slug: v.slug,
    title: v.title,
    tags: v.tags,
    architecture: v.architecture,
    sampleRate: v.sampleRate,
    fileKey: `${BUILTIN_FILE_PREFIX}${v.file}`,
    instrument: v.instrument === true,
    metadata: {
      sha256: v.sha256,
      ...(v.espeak === undefined ? {} : { espeak: v.espeak }),
      ...(v.gender === undefined ? {} : { gender: v.gender }),
      ...(v.gmProgram === undefined ? {} : { gmProgram: v.gmProgram }),
      builtin: true,
    },
  }));
}
