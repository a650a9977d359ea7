import type { SeparationFamily } from "./family.ts";
import { htdemucsFamily } from "./htdemucs/index.ts";
import type { HtdemucsModel } from "./htdemucs/model.ts";
import { unsupportedArchitecture, type Architecture, type SeparationManifest } from "./manifests.ts";
import { mdxFamily } from "./mdx/index.ts";
import type { MdxModel } from "./mdx/model.ts";
import { bsRoformerFamily, mdx23cFamily, melBandRoformerFamily } from "./msst/index.ts";
import type { MsstModel } from "./msst/model.ts";

export { knownArchitectures, outputStemNames, parseManifest, readsInputOnce, type SeparationManifest } from "./manifests.ts";

/** Any registered family's loaded model. */
export type SeparationModel = MdxModel | HtdemucsModel | MsstModel;

type AnyFamily = SeparationFamily<SeparationManifest, SeparationModel>;

/**
 * The loader of each architecture a manifest may name (`FAMILY_DESCRIPTORS`): keyed by
 * `Architecture`, so a family declared without its loader does not compile, and a manifest naming
 * any other architecture is refused when it is read, not when a job reaches it.
 */
const FAMILIES: { readonly [A in Architecture]: AnyFamily } = {
  mdx: mdxFamily,
  htdemucs: htdemucsFamily as AnyFamily,
  bs_roformer: bsRoformerFamily,
  mel_band_roformer: melBandRoformerFamily,
  mdx23c: mdx23cFamily,
};

/** The family for `architecture`; `source` names the manifest in the error. */
export function familyFor(architecture: string, source: string): AnyFamily {
  const family = Object.hasOwn(FAMILIES, architecture) ? FAMILIES[architecture as Architecture] : undefined;
  if (!family) throw unsupportedArchitecture(architecture, source);
  return family;
}
