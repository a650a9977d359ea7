import { Type, type Static } from "typebox";
import {
  BACKING_STEM,
  GRAPH_OPTIMIZATION_LEVELS,
  IntegerField,
  ManifestBaseSchema,
  manifestReader,
  SecondaryStem,
  StemName,
  StemNames,
} from "../../manifest.ts";
import type { FamilyDescriptor } from "../family.ts";

/**
 * A model manifest: `models/<name>.json` next to the `.onnx` it describes.
 *
 * ```json
 * { "name": "vocals", "architecture": "mdx", "file": "vocals.onnx", "sampleRate": 44100,
 *   "nFft": 4096, "hopLength": 1024, "dimF": 1024, "dimT": 256, "compensate": 1.0,
 *   "primaryStem": "vocals", "secondaryStem": "backing", "stems": ["vocals"] }
 * ```
 *
 * Its fields are declared in the order they are checked, so that the first a manifest gets wrong
 * is the one its error names.
 */
const MdxManifestSchema = Type.Object({
  ...ManifestBaseSchema.properties,
  architecture: Type.Literal("mdx"),
  nFft: IntegerField({ minimum: 8, multipleOf: 2 }),
  hopLength: IntegerField({ minimum: 1, range: (m: { nFft: number }) => [1, m.nFft] }),
  dimF: IntegerField({ minimum: 1, range: (m: { nFft: number }) => [1, m.nFft / 2 + 1] }),
  dimT: IntegerField({ minimum: 2 }),
  /** multiplies every stem the model outputs before secondaries are derived */
  compensate: Type.Number({ exclusiveMinimum: 0, default: 1 }),
  primaryStem: StemName,
  /** stems the model outputs, in output order; one entry for rank-4 outputs */
  stems: StemNames,
  /** single-stem models: name of mixture − primary */
  secondaryStem: SecondaryStem,
  /**
   * onnxruntime's graph optimisation level for this network (default `all`, as
   * python-audio-separator runs it). The default models name `extended`: on their narrow
   * convolutions `all`'s blocked layout is no faster and holds 55-75 MB more per run.
   */
  graphOptimization: Type.Optional(Type.Enum(GRAPH_OPTIMIZATION_LEVELS)),
});
export type MdxManifest = Static<typeof MdxManifestSchema>;

/**
 * Validates parsed JSON as an MDX manifest; `source` names it in errors. The family registry has
 * already checked that it is an object whose `architecture` is "mdx"; called directly, this
 * checks both. The rules are what the schema cannot say: relations between fields.
 */
export const parseMdxManifest = manifestReader(MdxManifestSchema, {
  hopLength: (m, { failAt }) => {
    if (m.hopLength > m.nFft) failAt("hopLength");
  },
  dimF: (m, { failAt }) => {
    if (m.dimF > m.nFft / 2 + 1) failAt("dimF");
  },
  dimT: (m, { fail }) => {
    if (m.hopLength * (m.dimT - 1) <= m.nFft)
      fail(
        `a chunk of hopLength·(dimT−1) = ${m.hopLength * (m.dimT - 1)} samples leaves nothing after trimming nFft/2 at each side`,
      );
  },
  stems: (m, { fail }) => {
    if (m.stems.length === 1 && m.stems[0] !== m.primaryStem) fail(`single-stem model: "stems" must be ["${m.primaryStem}"]`);
  },
  secondaryStem: (m, { fail, failAt }) => {
    if (m.stems.length === 1) {
      if (m.secondaryStem === undefined) failAt("secondaryStem");
      if (m.secondaryStem === m.primaryStem) fail('"secondaryStem" must differ from "primaryStem"');
    } else {
      if (m.secondaryStem !== undefined) failAt("secondaryStem");
      if (!m.stems.includes(m.primaryStem)) fail(`"primaryStem" "${m.primaryStem}" is not one of "stems"`);
    }
  },
});

/**
 * Stems a separation produces, in order: for single-stem models the primary
 * and its secondary (mixture − primary); for multi-stem models every output
 * stem plus `backing` (mixture − vocals) when there is a vocals stem.
 */
export function mdxOutputStemNames(manifest: MdxManifest): string[] {
  if (manifest.stems.length === 1) return [manifest.primaryStem, manifest.secondaryStem!];
  const names = [...manifest.stems];
  if (names.includes("vocals") && !names.includes(BACKING_STEM)) names.push(BACKING_STEM);
  return names;
}

/** MDX-Net's manifest side (the family adds its loader in `index.ts`). */
export const mdxDescriptor = {
  architecture: "mdx",
  parseManifest: parseMdxManifest,
  outputStems: mdxOutputStemNames,
  readsInputOnce: true,
} as const satisfies FamilyDescriptor<MdxManifest>;
