import { Type, type Static } from "typebox";
import {
  BACKING_STEM,
  IntegerField,
  ManifestBaseSchema,
  manifestReader,
  SecondaryStem,
  StemNames,
  type ManifestRules,
} from "../../manifest.ts";
import type { FamilyDescriptor } from "../family.ts";

/**
 * What MSST's `demix` reads (utils/model_utils.py at ZFTurbo/Music-Source-Separation-Training
 * ccc011a): chunks of `chunkSize` samples every `chunkSize / numOverlap`, `batchSize` chunks per
 * model call, which also decides which chunks keep their linear fades (see demix.ts). Its fields
 * are declared in the order they are checked, so that the first a manifest gets wrong is the one
 * its error names.
 */
const msstFields = <A extends string>(architecture: A) => ({
  ...ManifestBaseSchema.properties,
  architecture: Type.Literal(architecture),
  nFft: IntegerField({ minimum: 16, multipleOf: 2 }),
  hopLength: IntegerField({ minimum: 1, range: (m: { nFft: number }) => [1, m.nFft] }),
  /** `audio.chunk_size` (or `inference.chunk_size`) */
  chunkSize: IntegerField({ minimum: 1, range: (m: { nFft: number }) => [m.nFft, Number.MAX_SAFE_INTEGER] }),
  /** `inference.num_overlap` */
  numOverlap: IntegerField({ minimum: 1, range: (m: { chunkSize: number }) => [1, m.chunkSize] }),
  /** `inference.batch_size`: MSST's grouping of chunks, which its fades depend on */
  batchSize: IntegerField({ minimum: 1, maximum: 1024 }),
  /** stems the model outputs, in output order (MSST's prefer_target_instrument) */
  stems: StemNames,
  /** single-stem models: the name of mixture − the stem */
  secondaryStem: SecondaryStem,
});

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
const roformerSchema = <A extends "bs_roformer" | "mel_band_roformer">(architecture: A) =>
  Type.Object({
    ...msstFields(architecture),
    /** torch.stft(normalized=...) */
    normalized: Type.Boolean({ default: false }),
    /** the DC bin is zeroed before the iSTFT (MSST since 2025-09-23; true at the pinned commit) */
    zeroDc: Type.Boolean({ default: true }),
  });
const BsRoformerManifestSchema = roformerSchema("bs_roformer");
const MelBandRoformerManifestSchema = roformerSchema("mel_band_roformer");
export type RoformerManifest = Static<typeof BsRoformerManifestSchema> | Static<typeof MelBandRoformerManifestSchema>;

/**
 * MDX23C (TFC-TDF v3): the graph maps the cropped STFT [4 (L re, L im, R re, R im), dimF,
 * frames] to [stems, 4, dimF, frames]; the bins from dimF up are zero for the inverse.
 */
const Mdx23cManifestSchema = Type.Object({
  ...msstFields("mdx23c"),
  dimF: IntegerField({ minimum: 1, range: (m: { nFft: number }) => [1, m.nFft / 2 + 1] }),
});
export type Mdx23cManifest = Static<typeof Mdx23cManifestSchema>;

export type MsstManifest = RoformerManifest | Mdx23cManifest;

/** What every MSST family's manifest must hold beyond its schema: relations between its fields. */
const msstRules: ManifestRules<MsstManifest> = {
  hopLength: (m, { failAt }) => {
    if (m.hopLength > m.nFft) failAt("hopLength");
  },
  chunkSize: (m, { fail, failAt }) => {
    if (m.chunkSize < m.nFft) failAt("chunkSize");
    if (Math.floor(m.chunkSize / 10) < 1) fail('"chunkSize" is too short for the fades (chunkSize / 10 ≥ 1)');
  },
  numOverlap: (m, { failAt }) => {
    if (m.numOverlap > m.chunkSize) failAt("numOverlap");
  },
  secondaryStem: (m, { fail, failAt }) => {
    if (m.stems.length === 1) {
      if (m.secondaryStem === undefined) failAt("secondaryStem");
      if (m.secondaryStem === m.stems[0]) fail('"secondaryStem" must differ from the stem');
    } else if (m.secondaryStem !== undefined) failAt("secondaryStem");
  },
};

/** Validates parsed JSON as a BS-RoFormer manifest; `source` names it in errors. */
export const parseBsRoformerManifest = manifestReader(BsRoformerManifestSchema, msstRules);

/** Validates parsed JSON as a Mel-Band RoFormer manifest. */
export const parseMelBandRoformerManifest = manifestReader(MelBandRoformerManifestSchema, msstRules);

/** Validates parsed JSON as an MDX23C manifest. */
export const parseMdx23cManifest = manifestReader(Mdx23cManifestSchema, {
  ...msstRules,
  dimF: (m, { fail, failAt }) => {
    if (m.dimF > m.nFft / 2 + 1) failAt("dimF");
    // MSST's MDX23C inverts without a length: its output is (frames − 1)·hop samples long
    if (m.chunkSize % m.hopLength !== 0) fail(`"chunkSize" ${m.chunkSize} must be a multiple of "hopLength" ${m.hopLength}`);
  },
});

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
  parseManifest: parseBsRoformerManifest,
  outputStems: msstOutputStemNames,
  readsInputOnce: true,
} as const satisfies FamilyDescriptor<MsstManifest>;

/** Mel-Band RoFormer's manifest side. */
export const melBandRoformerDescriptor = {
  architecture: "mel_band_roformer",
  parseManifest: parseMelBandRoformerManifest,
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
