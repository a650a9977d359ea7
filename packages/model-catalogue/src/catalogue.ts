import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { readInstalledModels } from "@mixdown/separation/installed-models";
import type { ImportFamily } from "@mixdown/separation/import";
import { z } from "zod";

/** The catalogue committed with Mixdown (`models/catalogue.json`). */
export const DEFAULT_CATALOGUE = fileURLToPath(new URL("../../../models/catalogue.json", import.meta.url));

/** The families `models import` converts, and the two RVC assets `voices import-features` / `import-pitch` install. */
export const SEPARATION_FAMILIES = ["htdemucs", "bs_roformer", "mel_band_roformer", "mdx23c", "mdx"] as const;
export const VOICE_ASSET_FAMILIES = ["contentvec", "rmvpe"] as const;
/** Base voices for text to speech, installed in TTS_PIPER_DIR. */
export const TTS_VOICE_FAMILIES = ["piper"] as const;
// The compiler keeps the list and the importer's families the same, both ways.
const sameFamilies: [ImportFamily, (typeof SEPARATION_FAMILIES)[number]] extends [
  (typeof SEPARATION_FAMILIES)[number],
  ImportFamily,
]
  ? true
  : never = true;
void sameFamilies;

const hex = (length: number) => z.string().regex(new RegExp(`^[0-9a-f]{${length}}$`), `${length} lowercase hex digits`);
const fileName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.+-]*$/, "a plain file name");

const CatalogueFile = z
  .object({
    name: fileName,
    url: z.url({ protocol: /^https$/ }),
    sizeBytes: z.number().int().positive().nullable(),
    sha256: hex(64).nullable(),
    sha256Prefix: z
      .string()
      .regex(/^[0-9a-f]{4,63}$/)
      .optional(),
    uvrHash: hex(32).optional(),
    md5: hex(32).optional(),
    noHash: z.string().min(10).optional(),
  })
  .strict()
  .refine((f) => f.sha256 !== null || f.noHash !== undefined, {
    message: "a file without sha256 must say why in noHash",
  })
  .refine((f) => f.sha256 === null || f.noHash === undefined, { message: "noHash goes only with sha256: null" });

const Reported = z
  .object({
    stem: z.string(),
    metric: z.string(),
    value: z.number(),
    benchmark: z.string(),
    source: z.string(),
  })
  .strict();

const CatalogueEntry = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/),
    kind: z.enum(["separation", "voice-asset", "tts-voice"]),
    family: z.enum([...SEPARATION_FAMILIES, ...VOICE_ASSET_FAMILIES, ...TTS_VOICE_FAMILIES]),
    stems: z.array(z.string()).optional(),
    description: z.string().min(10),
    importFile: fileName,
    importConfig: fileName.optional(),
    mdx: z
      .object({
        nFft: z.number().int().positive(),
        dimF: z.number().int().positive(),
        dimT: z.number().int().positive(),
        compensate: z.number().positive(),
        primaryStem: z.string(),
      })
      .strict()
      .optional(),
    files: z.array(CatalogueFile).min(1),
    licence: z.string().min(2),
    source: z.url(),
    reported: z.array(Reported),
    evidence: z.array(z.string()).min(1),
  })
  .strict()
  .superRefine((e, ctx) => {
    const names = e.files.map((f) => f.name);
    const problem = (message: string) => ctx.addIssue({ code: "custom", message });
    if (new Set(names).size !== names.length) problem("two files have the same name");
    if (!names.includes(e.importFile)) problem(`importFile ${e.importFile} is not one of its files`);
    if (e.importConfig !== undefined && !names.includes(e.importConfig))
      problem(`importConfig ${e.importConfig} is not one of its files`);
    const separation = (SEPARATION_FAMILIES as readonly string[]).includes(e.family);
    if (separation !== (e.kind === "separation")) problem(`family ${e.family} is not a ${e.kind} family`);
    if (separation && !e.stems?.length) problem("a separation model lists its stems");
    const ttsVoice = (TTS_VOICE_FAMILIES as readonly string[]).includes(e.family);
    if (ttsVoice !== (e.kind === "tts-voice")) problem(`family ${e.family} is not a ${e.kind} family`);
    if (ttsVoice && e.importConfig === undefined) problem("a Piper voice needs its importConfig (the .onnx.json)");
    if ((e.family === "mdx") !== (e.mdx !== undefined)) problem("mdx geometry goes with, and only with, family mdx");
    const msst = ["bs_roformer", "mel_band_roformer", "mdx23c"].includes(e.family);
    if (msst && e.importConfig === undefined) problem(`a ${e.family} checkpoint needs its importConfig (the yaml)`);
  });

export const ModelCatalogueSchema = z
  .object({ version: z.literal(1), models: z.array(CatalogueEntry) })
  .strict()
  .superRefine((c, ctx) => {
    const seen = new Set<string>();
    for (const m of c.models) {
      if (seen.has(m.name)) ctx.addIssue({ code: "custom", message: `two entries are named ${m.name}` });
      seen.add(m.name);
    }
  });

export type ModelCatalogue = z.infer<typeof ModelCatalogueSchema>;
export type CatalogueEntry = z.infer<typeof CatalogueEntry>;
export type CatalogueFile = z.infer<typeof CatalogueFile>;

export class CatalogueError extends Error {
  override readonly name = "CatalogueError";
}

/** Reads and checks a catalogue file; every problem is named with its entry. */
export async function readModelCatalogue(path = DEFAULT_CATALOGUE): Promise<ModelCatalogue> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, "utf8"));
  } catch (err) {
    throw new CatalogueError(`${path}: ${(err as Error).message}`);
  }
  const parsed = ModelCatalogueSchema.safeParse(raw);
  if (!parsed.success) {
    const models = (raw as { models?: { name?: string }[] }).models;
    const lines = parsed.error.issues.map((issue) => {
      const [first, index] = issue.path;
      const where =
        first === "models" && typeof index === "number"
          ? `${models?.[index]?.name ?? `entry ${index}`}${issue.path.length > 2 ? `.${issue.path.slice(2).join(".")}` : ""}`
          : issue.path.join(".") || "(top)";
      return `  ${where}: ${issue.message}`;
    });
    throw new CatalogueError(`${path} is not a valid model catalogue:\n${lines.join("\n")}`);
  }
  return parsed.data;
}

/** Where the RVC assets are installed (MODELS_DIR-relative settings, resolved). */
export interface VoiceAssetPaths {
  contentVec: string;
  contentVecV1: string;
  rmvpe: string;
  /** TTS_PIPER_DIR: where Piper voices are installed. */
  piperVoices: string;
}

export function voiceAssetPaths(
  modelsDir: string,
  env: {
    VOICE_CONTENTVEC_MODEL?: string | undefined;
    VOICE_CONTENTVEC_V1_MODEL?: string | undefined;
    VOICE_RMVPE_MODEL?: string | undefined;
    TTS_PIPER_DIR?: string | undefined;
  },
): VoiceAssetPaths {
  return {
    contentVec: resolve(modelsDir, env.VOICE_CONTENTVEC_MODEL ?? "voices/vec-768-layer-12.onnx"),
    contentVecV1: resolve(modelsDir, env.VOICE_CONTENTVEC_V1_MODEL ?? "voices/vec-256-layer-9.onnx"),
    rmvpe: resolve(modelsDir, env.VOICE_RMVPE_MODEL ?? "voices/rmvpe.onnx"),
    piperVoices: resolve(modelsDir, env.TTS_PIPER_DIR ?? "tts"),
  };
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

/** The names of the catalogue's entries installed now: a separation model by its manifest, an asset by its files. */
export async function installedEntries(
  catalogue: ModelCatalogue,
  modelsDir: string,
  assets: VoiceAssetPaths,
): Promise<Set<string>> {
  const { models } = await readInstalledModels(modelsDir);
  const separation = new Set(models.map((m) => m.name));
  const installed = new Set<string>();
  for (const entry of catalogue.models) {
    if (entry.family === "contentvec") {
      if ((await exists(assets.contentVec)) && (await exists(assets.contentVecV1))) installed.add(entry.name);
    } else if (entry.family === "rmvpe") {
      if (await exists(assets.rmvpe)) installed.add(entry.name);
    } else if (entry.family === "piper") {
      if (await exists(resolve(assets.piperVoices, entry.importFile))) installed.add(entry.name);
    } else if (separation.has(entry.name)) installed.add(entry.name);
  }
  return installed;
}

/** What the entry's files weigh together, when every size is known. */
export function entrySize(entry: CatalogueEntry): number | undefined {
  let total = 0;
  for (const f of entry.files) {
    if (f.sizeBytes === null) return undefined;
    total += f.sizeBytes;
  }
  return total;
}
