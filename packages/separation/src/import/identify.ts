import { readFile, readdir, stat } from "node:fs/promises";
import { basename, dirname, extname, join } from "node:path";
import { uvrModelHash } from "@mixdown/downloads";
import { parse as parseYaml, type Tags } from "yaml";
import { ImportProblem, isTensorInfo, isZipFile, pickledGlobalName, readTorchFile } from "@mixdown/python";

export { uvrModelHash };

/**
 * Which family a model file a user owns belongs to, told from its contents:
 * a demucs package (`.th`), an MSST state dict with its yaml (`.ckpt`), a
 * demucs bag yaml with its member files, or an MDX-Net ONNX whose geometry
 * UVR's model_data table gives by the file's hash.
 */

/** The families an imported file can become; the torch ones are converted by `mixdown_export.<family>`. */
export type ImportFamily = "mdx" | "htdemucs" | "bs_roformer" | "mel_band_roformer" | "mdx23c";

export interface IdentifiedModel {
  family: ImportFamily;
  /** what the file was found to be, for the user */
  description: string;
  /** the file the exporter reads: the checkpoint, or the bag's yaml */
  checkpoint: string;
  /** the MSST yaml that goes with the checkpoint */
  config?: string;
  /** MDX-Net ONNX only: the manifest fields UVR's table (or the flags) give */
  mdx?: MdxGeometry;
}

export interface MdxGeometry {
  nFft: number;
  dimF: number;
  dimT: number;
  compensate: number;
  primaryStem: string;
  secondaryStem: string;
}

// A file that cannot be imported, with what is wrong and what to do: one class for every importer.
export { ImportProblem };

export interface IdentifyOptions {
  /** the MSST yaml (default: `<checkpoint base name>.yaml` next to it) */
  config?: string;
  /** UVR's model_data.json (default: looked for next to an ONNX file) */
  modelData?: string;
  /** MDX-Net geometry given by hand, over the table's */
  mdx?: Partial<Omit<MdxGeometry, "secondaryStem">>;
}

/** YAML as MSST's configs are written: `!!python/tuple` sequences read as arrays. */
const PYTHON_TUPLE: Tags = [
  {
    tag: "tag:yaml.org,2002:python/tuple",
    collection: "seq",
    identify: () => false,
  },
];

export async function readYamlFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new ImportProblem(`cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    return parseYaml(text, { customTags: PYTHON_TUPLE });
  } catch (err) {
    throw new ImportProblem(`${path} is not valid YAML: ${(err as Error).message}`);
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export async function identifyModelFile(path: string, options: IdentifyOptions = {}): Promise<IdentifiedModel> {
  const info = await stat(path).catch(() => undefined);
  if (!info?.isFile()) throw new ImportProblem(`${path}: no such file`);
  const ext = extname(path).toLowerCase();
  if (ext === ".yaml" || ext === ".yml") return identifyYaml(path);
  if (await isZipFile(path)) return identifyTorch(path, options);
  if (ext === ".onnx") return identifyMdxOnnx(path, options);
  // readTorchFile words the answer for legacy torch files and anything else
  await readTorchFile(path);
  throw new ImportProblem(`${path}: not a model file Mixdown knows`);
}

async function identifyYaml(path: string): Promise<IdentifiedModel> {
  const yaml = await readYamlFile(path);
  if (isRecord(yaml) && Array.isArray(yaml.models)) {
    const signatures = yaml.models.map(String);
    const missing: string[] = [];
    for (const sig of signatures) if (!(await findBagMember(dirname(path), sig))) missing.push(sig);
    if (missing.length > 0)
      throw new ImportProblem(
        `${path} is a demucs bag of ${signatures.length} models; put their files next to it: missing ${missing.map((s) => `${s}.th`).join(", ")}`,
      );
    return {
      family: "htdemucs",
      description: `a demucs bag of ${signatures.length} models (${signatures.join(", ")})`,
      checkpoint: path,
    };
  }
  if (isRecord(yaml) && isRecord(yaml.model) && isRecord(yaml.audio))
    throw new ImportProblem(`${path} is an MSST config: import its checkpoint with --config ${path}`);
  throw new ImportProblem(`${path}: a YAML file that is neither a demucs bag (a "models" list) nor an MSST config`);
}

/** A bag member as demucs's repositories name it: `<sig>.th` or `<sig>-<checksum>.th`. */
export async function findBagMember(dir: string, signature: string): Promise<string | undefined> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const hit = names.find((n) => n === `${signature}.th`) ?? names.find((n) => n.startsWith(`${signature}-`) && n.endsWith(".th"));
  return hit ? join(dir, hit) : undefined;
}

/** The state dict inside an MSST checkpoint: plain, or under `state_dict` / `model_state_dict` / `state`. */
function stateDictOf(value: unknown): Record<string, unknown> | undefined {
  if (!isRecord(value)) return undefined;
  if (Object.values(value).some(isTensorInfo)) return value;
  for (const key of ["state_dict", "model_state_dict", "state", "model"]) {
    const inner = value[key];
    if (isRecord(inner) && Object.values(inner).some(isTensorInfo)) return inner;
  }
  return undefined;
}

async function identifyTorch(path: string, options: IdentifyOptions): Promise<IdentifiedModel> {
  const content = await readTorchFile(path);
  if (isRecord(content) && "klass" in content && "state" in content) {
    const klass = pickledGlobalName(content.klass) ?? "an unknown class";
    if (!klass.endsWith(".HTDemucs"))
      throw new ImportProblem(`${path}: a demucs model of class ${klass}; only HTDemucs (demucs v4) models are supported`);
    const kwargs = isRecord(content.kwargs) ? content.kwargs : {};
    const sources = Array.isArray(kwargs.sources) ? kwargs.sources.map(String) : [];
    return {
      family: "htdemucs",
      description: `an HTDemucs model (${sources.length} sources: ${sources.join(", ")})`,
      checkpoint: path,
    };
  }
  const state = stateDictOf(content);
  if (!state) throw new ImportProblem(`${path}: a PyTorch file that holds neither a demucs package nor a state dict`);
  const keys = Object.keys(state);
  const has = (prefix: string) => keys.some((k) => k.startsWith(prefix));
  const roformer = has("band_split.") && has("mask_estimators.");
  const mdx23c = has("first_conv.") && has("encoder_blocks.") && has("final_conv.");
  if (!roformer && !mdx23c)
    throw new ImportProblem(
      `${path}: a state dict of an unknown family (its first keys: ${keys.slice(0, 4).join(", ")}); known: HTDemucs, BS-RoFormer, Mel-Band RoFormer, MDX23C, MDX-Net ONNX`,
    );
  const config = options.config ?? (await defaultConfig(path));
  if (!config)
    throw new ImportProblem(
      `${path}: an MSST ${roformer ? "RoFormer" : "MDX23C"} checkpoint needs its yaml: pass --config <file.yaml>`,
    );
  const yaml = await readYamlFile(config);
  const model = isRecord(yaml) && isRecord(yaml.model) ? yaml.model : undefined;
  if (!model) throw new ImportProblem(`${config}: no "model" section, so not an MSST config`);
  if (mdx23c) return { family: "mdx23c", description: "an MSST MDX23C checkpoint", checkpoint: path, config };
  if ("freqs_per_bands" in model)
    return { family: "bs_roformer", description: "an MSST BS-RoFormer checkpoint", checkpoint: path, config };
  if ("num_bands" in model)
    return { family: "mel_band_roformer", description: "an MSST Mel-Band RoFormer checkpoint", checkpoint: path, config };
  throw new ImportProblem(
    `${config}: a RoFormer config with neither "freqs_per_bands" (BS-RoFormer) nor "num_bands" (Mel-Band RoFormer) under "model"`,
  );
}

async function defaultConfig(checkpoint: string): Promise<string | undefined> {
  const base = join(dirname(checkpoint), basename(checkpoint, extname(checkpoint)));
  for (const candidate of [`${base}.yaml`, `${base}.yml`])
    if ((await stat(candidate).catch(() => undefined))?.isFile()) return candidate;
  return undefined;
}

/** UVR names stems "Vocals", "Instrumental", "Drums"...; Kits names the instrumental "backing". */
function stemPair(primary: string): { primaryStem: string; secondaryStem: string } {
  const p = primary
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "_");
  if (p === "instrumental" || p === "inst") return { primaryStem: "backing", secondaryStem: "vocals" };
  if (p === "vocals") return { primaryStem: "vocals", secondaryStem: "backing" };
  return { primaryStem: p, secondaryStem: `no_${p}` };
}

async function identifyMdxOnnx(path: string, options: IdentifyOptions): Promise<IdentifiedModel> {
  const hash = await uvrModelHash(path);
  const tables = options.modelData
    ? [options.modelData]
    : [join(dirname(path), "model_data.json"), join(dirname(path), "model_data", "model_data.json")];
  let entry: Record<string, unknown> | undefined;
  let tableUsed: string | undefined;
  for (const table of tables) {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(table, "utf8"));
    } catch (err) {
      if (options.modelData) throw new ImportProblem(`cannot read UVR's model_data table ${table}: ${(err as Error).message}`);
      continue;
    }
    if (isRecord(json) && isRecord(json[hash])) {
      entry = json[hash] as Record<string, unknown>;
      tableUsed = table;
      break;
    }
  }
  if (entry && "config_yaml" in entry && !("mdx_dim_f_set" in entry))
    throw new ImportProblem(
      `${path}: UVR's table lists it with ${String(entry.config_yaml)}, which is not an MDX-Net ONNX entry`,
    );
  const fromTable: Partial<MdxGeometry> = entry
    ? {
        nFft: Number(entry.mdx_n_fft_scale_set),
        dimF: Number(entry.mdx_dim_f_set),
        dimT: 2 ** Number(entry.mdx_dim_t_set),
        compensate: Number(entry.compensate ?? 1),
      }
    : {};
  const geometry = { ...fromTable, ...definedOnly(options.mdx ?? {}) };
  const missing = (["nFft", "dimF", "dimT"] as const).filter((k) => !(Number.isInteger(geometry[k]) && geometry[k]! > 0));
  if (missing.length > 0)
    throw new ImportProblem(
      `${path}: an ONNX file whose hash ${hash} is not in UVR's model_data table (${tables.join(" or ")}); ` +
        `pass --model-data <model_data.json> or its geometry (--n-fft, --dim-f, --dim-t, --compensate, --primary-stem)`,
    );
  const stems = stemPair(options.mdx?.primaryStem ?? String(entry?.primary_stem ?? "Vocals"));
  return {
    family: "mdx",
    description: `an MDX-Net ONNX model (${tableUsed ? `UVR's table entry ${hash}` : "geometry given by hand"})`,
    checkpoint: path,
    mdx: {
      nFft: geometry.nFft!,
      dimF: geometry.dimF!,
      dimT: geometry.dimT!,
      compensate: geometry.compensate ?? 1,
      ...stems,
    },
  };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
