import { Type, type Static } from "typebox";
import {
  BACKING_STEM,
  IntegerField,
  ManifestBaseSchema,
  manifestReader,
  NonEmptyString,
  StemNames,
  type FieldWording,
} from "../../manifest.ts";
import type { FamilyDescriptor } from "../family.ts";

/** A member's segment is at least nFft long, which its wording names. */
const segmentWording: FieldWording<{ nFft: number }> = (m, name) => `${name} must be an integer ≥ nFft (${m.nFft})`;

/** The weights are a row per member of a number per stem, which their wording names. */
const weightsWording: FieldWording<{ members: unknown[]; stems: unknown[] }> = (m, name) =>
  `${name} must be ${m.members.length} row(s) of ${m.stems.length} finite numbers (per member, per stem)`;

/** One model of an HTDemucs bag (a single model is a bag of one). */
const HtdemucsMemberSchema = Type.Object({
  /** ONNX file, relative to the manifest's directory: inputs `mix`, `spec`; outputs `time`, `spec_out` */
  file: NonEmptyString,
  /** the model's training segment in samples: every chunk it runs is this long */
  segmentSamples: Type.Integer({ wording: segmentWording }),
});
export type HtdemucsMember = Static<typeof HtdemucsMemberSchema>;

/**
 * An HTDemucs model or bag as `python -m mixdown_export htdemucs` writes it:
 *
 * ```json
 * { "name": "htdemucs_ft", "architecture": "htdemucs", "file": "htdemucs_ft.0.onnx", "sampleRate": 44100,
 *   "nFft": 4096, "hopLength": 1024, "stems": ["drums", "bass", "other", "vocals"],
 *   "members": [{ "file": "htdemucs_ft.0.onnx", "segmentSamples": 343980 }, ...],
 *   "weights": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]] }
 * ```
 *
 * Its fields are declared in the order they are checked, so that the first a manifest gets wrong
 * is the one its error names. `file` is the first member's.
 */
const HtdemucsManifestSchema = Type.Object({
  ...ManifestBaseSchema.properties,
  architecture: Type.Literal("htdemucs"),
  nFft: IntegerField({ minimum: 16, multipleOf: 4 }),
  /** nFft / 4, as HTDemucs requires */
  hopLength: IntegerField({ minimum: 1 }),
  /** the sources, in the models' output order */
  stems: StemNames,
  members: Type.Array(HtdemucsMemberSchema, { minItems: 1 }),
  /** per member, per source: demucs.apply.BagOfModels's weights */
  weights: Type.Array(Type.Array(Type.Number()), { wording: weightsWording }),
  /** the separations' `shifts` when the caller gives none (an operator's choice; absent: 0) */
  shifts: Type.Optional(IntegerField({ minimum: 0 })),
});
export type HtdemucsManifest = Static<typeof HtdemucsManifestSchema>;

/** Validates parsed JSON as an HTDemucs manifest; `source` names it in errors. The rules are what the schema cannot say. */
export const parseHtdemucsManifest = manifestReader(HtdemucsManifestSchema, {
  hopLength: (m, { fail }) => {
    if (m.hopLength !== m.nFft / 4) fail(`"hopLength" must be nFft / 4 = ${m.nFft / 4}`);
  },
  stems: (m, { fail }) => {
    if (m.stems.includes(BACKING_STEM)) fail(`"stems" must not name "${BACKING_STEM}": it is derived (mixture − vocals)`);
  },
  members: (m, { fail, failAt }) => {
    m.members.forEach((member, i) => {
      if (member.segmentSamples < m.nFft) failAt("members", i, "segmentSamples");
    });
    if (m.members[0].file !== m.file) fail(`"file" must be the first member's file ("${m.members[0].file}")`);
  },
  weights: (m, { fail, failAt }) => {
    if (m.weights.length !== m.members.length || m.weights.some((row) => row.length !== m.stems.length)) failAt("weights");
    m.stems.forEach((stem, k) => {
      if (m.weights.reduce((sum, row) => sum + row[k], 0) === 0) fail(`"weights" for stem "${stem}" sum to 0`);
    });
  },
});

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
