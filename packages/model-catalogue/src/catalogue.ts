import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { readInstalledModels } from "@mixdown/separation/installed-models";
import type { ImportFamily } from "@mixdown/separation/import";
import { SchemaCheck, typedAt, Url, type SchemaProblem } from "@mixdown/schema-check";
import { Type, type Static } from "typebox";

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

const hex = (length: number) => {
  const digits = new RegExp(`^[0-9a-f]{${length}}$`);
  return Type.Refine(
    Type.String(),
    (text) => digits.test(text),
    () => `${length} lowercase hex digits`,
  );
};
const fileName = Type.Refine(
  Type.String(),
  (text) => /^[A-Za-z0-9][A-Za-z0-9_.+-]*$/.test(text),
  () => "a plain file name",
);

const CatalogueFile = Type.Object(
  {
    name: fileName,
    url: Url("https"),
    sizeBytes: Type.Union([Type.Integer({ exclusiveMinimum: 0 }), Type.Null()]),
    sha256: Type.Union([hex(64), Type.Null()]),
    sha256Prefix: Type.Optional(Type.String({ pattern: "^[0-9a-f]{4,63}$" })),
    uvrHash: Type.Optional(hex(32)),
    md5: Type.Optional(hex(32)),
    noHash: Type.Optional(Type.String({ minLength: 10 })),
  },
  { additionalProperties: false },
);

const Reported = Type.Object(
  {
    stem: Type.String(),
    metric: Type.String(),
    value: Type.Number(),
    benchmark: Type.String(),
    source: Type.String(),
  },
  { additionalProperties: false },
);

const CatalogueEntry = Type.Object(
  {
    name: Type.String({ pattern: "^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$" }),
    kind: Type.Enum(["separation", "voice-asset", "tts-voice"]),
    family: Type.Enum([...SEPARATION_FAMILIES, ...VOICE_ASSET_FAMILIES, ...TTS_VOICE_FAMILIES]),
    stems: Type.Optional(Type.Array(Type.String())),
    description: Type.String({ minLength: 10 }),
    importFile: fileName,
    importConfig: Type.Optional(fileName),
    mdx: Type.Optional(
      Type.Object(
        {
          nFft: Type.Integer({ exclusiveMinimum: 0 }),
          dimF: Type.Integer({ exclusiveMinimum: 0 }),
          dimT: Type.Integer({ exclusiveMinimum: 0 }),
          compensate: Type.Number({ exclusiveMinimum: 0 }),
          primaryStem: Type.String(),
        },
        { additionalProperties: false },
      ),
    ),
    files: Type.Array(CatalogueFile, { minItems: 1 }),
    licence: Type.String({ minLength: 2 }),
    source: Url(),
    reported: Type.Array(Reported),
    evidence: Type.Array(Type.String(), { minItems: 1 }),
  },
  { additionalProperties: false },
);

export const ModelCatalogueSchema = Type.Object(
  { version: Type.Literal(1), models: Type.Array(CatalogueEntry) },
  { additionalProperties: false },
);

export type ModelCatalogue = Static<typeof ModelCatalogueSchema>;
export type CatalogueEntry = Static<typeof CatalogueEntry>;
export type CatalogueFile = Static<typeof CatalogueFile>;

const CATALOGUE_CHECK = new SchemaCheck(ModelCatalogueSchema);

/** The rules a file's fields keep together. */
function fileProblems(file: CatalogueFile): string[] {
  const problems: string[] = [];
  if (file.sha256 === null && file.noHash === undefined) problems.push("a file without sha256 must say why in noHash");
  if (file.sha256 !== null && file.noHash !== undefined) problems.push("noHash goes only with sha256: null");
  return problems;
}

/** The rules an entry's fields keep together. */
function entryProblems(e: CatalogueEntry): string[] {
  const problems: string[] = [];
  const problem = (message: string) => problems.push(message);
  const names = e.files.map((f) => f.name);
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
  return problems;
}

/** A problem for each name that more than one entry has. */
function sharedNameProblems(catalogue: ModelCatalogue): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const m of catalogue.models) {
    if (seen.has(m.name)) problems.push(`two entries are named ${m.name}`);
    seen.add(m.name);
  }
  return problems;
}

/**
 * Every problem of a catalogue: its schema's, and those of the rules across the fields of each
 * file, each entry and the whole, each rule run where the fields it reads are of their types.
 */
function catalogueProblems(raw: unknown): SchemaProblem[] {
  const problems = CATALOGUE_CHECK.problems(raw);
  const rules: SchemaProblem[] = [];
  const rule = (path: Array<string | number>, messages: string[]) =>
    rules.push(...messages.map((message) => ({ path, message, untyped: false })));
  const models = (raw as { models?: unknown } | null)?.models;
  (Array.isArray(models) ? (models as CatalogueEntry[]) : []).forEach((entry, i) => {
    (Array.isArray(entry?.files) ? entry.files : []).forEach((file, j) => {
      if (typedAt(problems, ["models", i, "files", j])) rule(["models", i, "files", j], fileProblems(file));
    });
    if (typedAt(problems, ["models", i])) rule(["models", i], entryProblems(entry));
  });
  if (typedAt(problems, [])) rule([], sharedNameProblems(raw as ModelCatalogue));
  return rules.length > 0 ? CATALOGUE_CHECK.inOrder(raw, [...problems, ...rules]) : problems;
}

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
  const problems = catalogueProblems(raw);
  if (problems.length > 0) {
    const models = (raw as { models?: { name?: string }[] } | null)?.models;
    const lines = problems.map(({ path: at, message }) => {
      const [first, index] = at;
      const where =
        first === "models" && typeof index === "number"
          ? `${models?.[index]?.name ?? `entry ${index}`}${at.length > 2 ? `.${at.slice(2).join(".")}` : ""}`
          : at.join(".") || "(top)";
      return `  ${where}: ${message}`;
    });
    throw new CatalogueError(`${path} is not a valid model catalogue:\n${lines.join("\n")}`);
  }
  return raw as ModelCatalogue;
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
