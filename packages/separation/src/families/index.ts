import type { SeparationFamily } from "./family.ts";
import { htdemucsFamily } from "./htdemucs/index.ts";
import type { HtdemucsModel } from "./htdemucs/model.ts";
import { unsupportedArchitecture, type SeparationManifest } from "./manifests.ts";
import { mdxFamily } from "./mdx/index.ts";
import type { MdxModel } from "./mdx/model.ts";
import { bsRoformerFamily, mdx23cFamily, melBandRoformerFamily } from "./msst/index.ts";
import type { MsstModel } from "./msst/model.ts";

export { knownArchitectures, outputStemNames, parseManifest, type SeparationManifest } from "./manifests.ts";

/** Any registered family's loaded model. */
export type SeparationModel = MdxModel | HtdemucsModel | MsstModel;

/**
 * The families the engine can run, by the manifest's `architecture`. Only
 * families that run end to end are listed: a manifest naming any other
 * architecture is refused when it is read, not when a job reaches it.
 */
const FAMILIES: ReadonlyMap<string, SeparationFamily<SeparationManifest, SeparationModel>> = new Map<
  string,
  SeparationFamily<SeparationManifest, SeparationModel>
>([
  [mdxFamily.architecture, mdxFamily],
  [htdemucsFamily.architecture, htdemucsFamily as unknown as SeparationFamily<SeparationManifest, SeparationModel>],
  [bsRoformerFamily.architecture, bsRoformerFamily],
  [melBandRoformerFamily.architecture, melBandRoformerFamily],
  [mdx23cFamily.architecture, mdx23cFamily],
]);

/** The family for `architecture`; `source` names the manifest in the error. */
export function familyFor(architecture: string, source: string): SeparationFamily<SeparationManifest, SeparationModel> {
  const family = FAMILIES.get(architecture);
  if (!family) throw unsupportedArchitecture(architecture, source);
  return family;
}
