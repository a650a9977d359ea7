import { BACKING_STEM, manifestFields } from "../../manifest.ts";
import type { FamilyDescriptor } from "../family.ts";

/**
 * What MSST's `demix` reads (utils/model_utils.py at ZFTurbo/Music-Source-Separation-Training
 * ccc011a): chunks of `chunkSize` samples every `chunkSize / numOverlap`, `batchSize` chunks per
 * model call, which also decides which chunks keep their linear fades (see demix.ts).
 */
interface MsstManifestBase {
  name: string;
  file: string;
  sampleRate: number;
  nFft: number;
  hopLength: number;
  /** `audio.chunk_size` (or `inference.chunk_size`) */
  chunkSize: number;
  /** `inference.num_overlap` */
  numOverlap: number;
  /** `inference.batch_size`: MSST's grouping of chunks, which its fades depend on */
  batchSize: number;
  /** stems the model outputs, in output order (MSST's prefer_target_instrument) */
  stems: string[];
  /** single-stem models: the name of mixture − the stem */
  secondaryStem?: string;
}

/**
 * BS-RoFormer and Mel-Band RoFormer: the graph maps the chunk's STFT (per channel, torch
 * layout [bins][frames][2]) to every stem's masked STFT.
 *
 * ```json
 * { "name": "bs-vocals", "architecture": "bs_roformer", "file": "bs-vocals.onnx", "sampleRate": 44100,
 *   "nFft": 2048, "hopLength": 441, "normalized": false, "zeroDc": true, "chunkSize": 352800,
 *   "numOverlap": 2, "batchSize": 4, "stems": ["vocals"], "secondaryStem": "backing" }
 * ```
 */
export interface RoformerManifest extends MsstManifestBase {
  architecture: "bs_roformer" | "mel_band_roformer";
  /** torch.stft(normalized=...) */
  normalized: boolean;
  /** the DC bin is zeroed before the iSTFT (MSST since 2025-09-23; true at the pinned commit) */
  zeroDc: boolean;
}

/**
 * MDX23C (TFC-TDF v3): the graph maps the cropped STFT [4 (L re, L im, R re, R im), dimF,
 * frames] to [stems, 4, dimF, frames]; the bins from dimF up are zero for the inverse.
 */
export interface Mdx23cManifest extends MsstManifestBase {
  architecture: "mdx23c";
  dimF: number;
}

export type MsstManifest = RoformerManifest | Mdx23cManifest;

function parseBase(json: Record<string, unknown>, source: string, architecture: string) {
  const f = manifestFields(json, source);
  const { fail, string, integer, stemName } = f;
  const name = string("name");
  if (string("architecture") !== architecture) fail(`"architecture" must be "${architecture}"`);
  const file = string("file");
  const sampleRate = integer("sampleRate", 1000, 384000);
  const nFft = integer("nFft", 16);
  if (nFft % 2 !== 0) fail('"nFft" must be even');
  const hopLength = integer("hopLength", 1, nFft);
  const chunkSize = integer("chunkSize", nFft);
  if (Math.floor(chunkSize / 10) < 1) fail('"chunkSize" is too short for the fades (chunkSize / 10 ≥ 1)');
  const numOverlap = integer("numOverlap", 1, chunkSize);
  const batchSize = integer("batchSize", 1, 1024);
  if (!Array.isArray(json.stems) || json.stems.length === 0) fail('"stems" must be a non-empty array');
  const stems = (json.stems as unknown[]).map((s, i) => stemName(s, `"stems[${i}]"`));
  if (new Set(stems).size !== stems.length) fail('"stems" has duplicates');
  let secondaryStem: string | undefined;
  if (stems.length === 1) {
    secondaryStem = stemName(json.secondaryStem, '"secondaryStem" (required for single-stem models)');
    if (secondaryStem === stems[0]) fail('"secondaryStem" must differ from the stem');
  } else if (json.secondaryStem !== undefined) fail('"secondaryStem" is only for single-stem models');
  const base = {
    name,
    file,
    sampleRate,
    nFft,
    hopLength,
    chunkSize,
    numOverlap,
    batchSize,
    stems,
    ...(secondaryStem !== undefined ? { secondaryStem } : {}),
  };
  return { base, f };
}

function bool(json: Record<string, unknown>, key: string, fallback: boolean, fail: (m: string) => never): boolean {
  const v = json[key] ?? fallback;
  if (typeof v !== "boolean") fail(`"${key}" must be true or false`);
  return v as boolean;
}

export function parseRoformerManifest(json: Record<string, unknown>, source: string): RoformerManifest {
  const architecture = json.architecture === "mel_band_roformer" ? "mel_band_roformer" : "bs_roformer";
  const { base, f } = parseBase(json, source, architecture);
  return {
    ...base,
    architecture,
    normalized: bool(json, "normalized", false, f.fail),
    zeroDc: bool(json, "zeroDc", true, f.fail),
  };
}

export function parseMdx23cManifest(json: Record<string, unknown>, source: string): Mdx23cManifest {
  const { base, f } = parseBase(json, source, "mdx23c");
  const dimF = f.integer("dimF", 1, base.nFft / 2 + 1);
  // MSST's MDX23C inverts without a length: its output is (frames − 1)·hop samples long
  if (base.chunkSize % base.hopLength !== 0)
    f.fail(`"chunkSize" ${base.chunkSize} must be a multiple of "hopLength" ${base.hopLength}`);
  return { ...base, architecture: "mdx23c", dimF };
}

/**
 * The stem mixture − stems is taken from, with its name: the model's vocals (named `backing`,
 * which MSST's `--extract_instrumental` writes as `instrumental`), or the single stem of a
 * single-stem model (named by `secondaryStem`). Multi-stem models without vocals derive none.
 */
export function msstDerivedStem(manifest: MsstManifest): { name: string; from: string } | undefined {
  if (manifest.stems.length === 1) return { name: manifest.secondaryStem!, from: manifest.stems[0] };
  if (manifest.stems.includes("vocals") && !manifest.stems.includes(BACKING_STEM)) return { name: BACKING_STEM, from: "vocals" };
  return undefined;
}

export function msstOutputStemNames(manifest: MsstManifest): string[] {
  const derived = msstDerivedStem(manifest);
  return derived ? [...manifest.stems, derived.name] : [...manifest.stems];
}

/** BS-RoFormer's manifest side (the family adds its loader in `index.ts`). */
export const bsRoformerDescriptor = {
  architecture: "bs_roformer",
  parseManifest: parseRoformerManifest,
  outputStems: msstOutputStemNames,
  readsInputOnce: true,
} as const satisfies FamilyDescriptor<MsstManifest>;

/** Mel-Band RoFormer's manifest side. */
export const melBandRoformerDescriptor = {
  architecture: "mel_band_roformer",
  parseManifest: parseRoformerManifest,
  outputStems: msstOutputStemNames,
  readsInputOnce: true,
} as const satisfies FamilyDescriptor<MsstManifest>;

/** MDX23C's manifest side. */
export const mdx23cDescriptor = {
  architecture: "mdx23c",
  parseManifest: parseMdx23cManifest,
  outputStems: msstOutputStemNames,
  readsInputOnce: true,
} as const satisfies FamilyDescriptor<MsstManifest>;
