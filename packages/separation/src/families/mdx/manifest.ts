import {
  BACKING_STEM,
  GRAPH_OPTIMIZATION_LEVELS,
  ManifestError,
  manifestFields,
  type GraphOptimizationLevel,
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
 */
export interface MdxManifest {
  name: string;
  architecture: "mdx";
  /** ONNX file, relative to the manifest's directory */
  file: string;
  sampleRate: number;
  nFft: number;
  hopLength: number;
  dimF: number;
  dimT: number;
  /** multiplies every stem the model outputs before secondaries are derived */
  compensate: number;
  primaryStem: string;
  /** single-stem models: name of mixture − primary */
  secondaryStem?: string;
  /** stems the model outputs, in output order; one entry for rank-4 outputs */
  stems: string[];
  /**
   * onnxruntime's graph optimisation level for this network (default `all`, as
   * python-audio-separator runs it). The default models name `extended`: on their narrow
   * convolutions `all`'s blocked layout is no faster and holds 55-75 MB more per run.
   */
  graphOptimization?: GraphOptimizationLevel;
}

/**
 * Validates parsed JSON as an MDX manifest; `source` names it in errors. The
 * family registry has already checked that it is an object whose
 * `architecture` is "mdx"; called directly, this checks both.
 */
export function parseMdxManifest(json: unknown, source: string): MdxManifest {
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw new ManifestError(source, "manifest must be a JSON object");
  const m = json as Record<string, unknown>;
  const { fail, string, integer, stemName } = manifestFields(m, source);

  const name = string("name");
  const architecture = string("architecture");
  if (architecture !== "mdx") fail(`unsupported architecture "${architecture}" (only "mdx")`);
  const file = string("file");
  const sampleRate = integer("sampleRate", 1000, 384000);
  const nFft = integer("nFft", 8);
  if (nFft % 2 !== 0) fail('"nFft" must be even');
  const hopLength = integer("hopLength", 1, nFft);
  const dimF = integer("dimF", 1, nFft / 2 + 1);
  const dimT = integer("dimT", 2);
  if (hopLength * (dimT - 1) <= nFft)
    fail(`a chunk of hopLength·(dimT−1) = ${hopLength * (dimT - 1)} samples leaves nothing after trimming nFft/2 at each side`);
  const compensate = m.compensate ?? 1;
  if (typeof compensate !== "number" || !Number.isFinite(compensate) || compensate <= 0)
    fail('"compensate" must be a positive number');
  const primaryStem = stemName(m.primaryStem, '"primaryStem"');
  if (!Array.isArray(m.stems) || m.stems.length === 0) fail('"stems" must be a non-empty array');
  const stems = (m.stems as unknown[]).map((s, i) => stemName(s, `"stems[${i}]"`));
  if (new Set(stems).size !== stems.length) fail('"stems" has duplicates');
  let secondaryStem: string | undefined;
  if (stems.length === 1) {
    if (stems[0] !== primaryStem) fail(`single-stem model: "stems" must be ["${primaryStem}"]`);
    secondaryStem = stemName(m.secondaryStem, '"secondaryStem" (required for single-stem models)');
    if (secondaryStem === primaryStem) fail('"secondaryStem" must differ from "primaryStem"');
  } else {
    if (m.secondaryStem !== undefined) fail('"secondaryStem" is only for single-stem models');
    if (!stems.includes(primaryStem)) fail(`"primaryStem" "${primaryStem}" is not one of "stems"`);
  }
  const { graphOptimization } = m;
  if (graphOptimization !== undefined && !(GRAPH_OPTIMIZATION_LEVELS as readonly unknown[]).includes(graphOptimization))
    fail(`"graphOptimization" must be one of ${GRAPH_OPTIMIZATION_LEVELS.join(", ")}, got ${JSON.stringify(graphOptimization)}`);
  return {
    name,
    architecture: "mdx",
    file,
    sampleRate,
    nFft,
    hopLength,
    dimF,
    dimT,
    compensate: compensate as number,
    primaryStem,
    ...(secondaryStem !== undefined ? { secondaryStem } : {}),
    stems,
    ...(graphOptimization !== undefined ? { graphOptimization: graphOptimization as GraphOptimizationLevel } : {}),
  };
}

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
