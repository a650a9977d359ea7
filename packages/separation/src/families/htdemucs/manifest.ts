import { BACKING_STEM, ManifestError, manifestFields } from "../../manifest.ts";
import type { FamilyDescriptor } from "../family.ts";

/** One model of an HTDemucs bag (a single model is a bag of one). */
export interface HtdemucsMember {
  /** ONNX file, relative to the manifest's directory: inputs `mix`, `spec`; outputs `time`, `spec_out` */
  file: string;
  /** the model's training segment in samples: every chunk it runs is this long */
  segmentSamples: number;
}

/**
 * An HTDemucs model or bag as `python -m mixdown_export htdemucs` writes it:
 *
 * ```json
 * { "name": "htdemucs_ft", "architecture": "htdemucs", "file": "htdemucs_ft.0.onnx", "sampleRate": 44100,
 *   "nFft": 4096, "hopLength": 1024, "stems": ["drums", "bass", "other", "vocals"],
 *   "members": [{ "file": "htdemucs_ft.0.onnx", "segmentSamples": 343980 }, ...],
 *   "weights": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]] }
 * ```
 */
export interface HtdemucsManifest {
  name: string;
  architecture: "htdemucs";
  /** the first member's file */
  file: string;
  sampleRate: number;
  nFft: number;
  /** nFft / 4, as HTDemucs requires */
  hopLength: number;
  /** the sources, in the models' output order */
  stems: string[];
  members: HtdemucsMember[];
  /** per member, per source: demucs.apply.BagOfModels's weights */
  weights: number[][];
  /** the separations' `shifts` when the caller gives none (an operator's choice; absent: 0) */
  shifts?: number;
}

/** Validates parsed JSON as an HTDemucs manifest; `source` names it in errors. */
export function parseHtdemucsManifest(json: unknown, source: string): HtdemucsManifest {
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw new ManifestError(source, "manifest must be a JSON object");
  const m = json as Record<string, unknown>;
  const { fail, string, integer, stemName } = manifestFields(m, source);
  const name = string("name");
  const architecture = string("architecture");
  if (architecture !== "htdemucs") fail(`unsupported architecture "${architecture}" (only "htdemucs")`);
  const file = string("file");
  const sampleRate = integer("sampleRate", 1000, 384000);
  const nFft = integer("nFft", 16);
  if (nFft % 4 !== 0) fail('"nFft" must be a multiple of 4');
  const hopLength = integer("hopLength", 1);
  if (hopLength !== nFft / 4) fail(`"hopLength" must be nFft / 4 = ${nFft / 4}`);
  if (!Array.isArray(m.stems) || m.stems.length === 0) fail('"stems" must be a non-empty array');
  const stems = (m.stems as unknown[]).map((s, i) => stemName(s, `"stems[${i}]"`));
  if (new Set(stems).size !== stems.length) fail('"stems" has duplicates');
  if (stems.includes(BACKING_STEM)) fail(`"stems" must not name "${BACKING_STEM}": it is derived (mixture − vocals)`);
  if (!Array.isArray(m.members) || m.members.length === 0) fail('"members" must be a non-empty array');
  const members = (m.members as unknown[]).map((entry, i): HtdemucsMember => {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return fail(`"members[${i}]" must be an object`);
    const fields = manifestFields(entry as Record<string, unknown>, source);
    const memberFile = (entry as Record<string, unknown>).file;
    if (typeof memberFile !== "string" || memberFile.length === 0) return fail(`"members[${i}].file" must be a non-empty string`);
    const segment = (entry as Record<string, unknown>).segmentSamples;
    if (typeof segment !== "number" || !Number.isInteger(segment) || segment < nFft)
      return fields.fail(`"members[${i}].segmentSamples" must be an integer ≥ nFft (${nFft})`);
    return { file: memberFile, segmentSamples: segment };
  });
  if (members[0].file !== file) fail(`"file" must be the first member's file ("${members[0].file}")`);
  const weights = m.weights;
  if (
    !Array.isArray(weights) ||
    weights.length !== members.length ||
    weights.some(
      (row) =>
        !Array.isArray(row) || row.length !== stems.length || row.some((w) => typeof w !== "number" || !Number.isFinite(w)),
    )
  )
    fail(`"weights" must be ${members.length} row(s) of ${stems.length} finite numbers (per member, per stem)`);
  const rows = weights as number[][];
  stems.forEach((stem, k) => {
    if (rows.reduce((sum, row) => sum + row[k], 0) === 0) fail(`"weights" for stem "${stem}" sum to 0`);
  });
  const shifts = m.shifts === undefined ? undefined : integer("shifts", 0);
  return {
    name,
    architecture: "htdemucs",
    file,
    sampleRate,
    nFft,
    hopLength,
    stems,
    members,
    weights: rows.map((row) => [...row]),
    ...(shifts !== undefined ? { shifts } : {}),
  };
}

/** The sources, plus `backing` (mixture − vocals) when there is a vocals source. */
export function htdemucsOutputStemNames(manifest: HtdemucsManifest): string[] {
  const names = [...manifest.stems];
  if (names.includes("vocals")) names.push(BACKING_STEM);
  return names;
}

/** HTDemucs's manifest side (the family adds its loader in `index.ts`). */
export const htdemucsDescriptor = {
  architecture: "htdemucs",
  parseManifest: parseHtdemucsManifest,
  outputStems: htdemucsOutputStemNames,
  // the song's mean and std first (demucs normalises by them), then the separation
  readsInputOnce: false,
} as const satisfies FamilyDescriptor<HtdemucsManifest>;
