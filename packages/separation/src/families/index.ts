import { ManifestError } from "../manifest.ts";
import type { SeparationFamily } from "./family.ts";
import { mdxFamily } from "./mdx/index.ts";
import type { MdxManifest } from "./mdx/manifest.ts";
import type { MdxModel } from "./mdx/model.ts";

/** Any registered family's manifest: one member per family, told apart by `architecture`. */
export type SeparationManifest = MdxManifest;
/** Any registered family's loaded model. */
export type SeparationModel = MdxModel;

/**
 * The families the engine can run, by the manifest's `architecture`. Only
 * families that run end to end are listed: a manifest naming any other
 * architecture is refused when it is read, not when a job reaches it.
 */
const FAMILIES: ReadonlyMap<string, SeparationFamily<SeparationManifest, SeparationModel>> = new Map([
  [mdxFamily.architecture, mdxFamily],
]);

/** The `architecture` values a manifest may name. */
export function knownArchitectures(): string[] {
  return [...FAMILIES.keys()];
}

/** The family for `architecture`; `source` names the manifest in the error. */
export function familyFor(architecture: string, source: string): SeparationFamily<SeparationManifest, SeparationModel> {
  const family = FAMILIES.get(architecture);
  if (!family) {
    const known = knownArchitectures()
      .map((a) => `"${a}"`)
      .join(", ");
    throw new ManifestError(source, `unsupported architecture "${architecture}" (known: ${known})`);
  }
  return family;
}

/** Validates parsed JSON as a manifest of whichever family its `architecture` names. */
export function parseManifest(json: unknown, source: string): SeparationManifest {
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw new ManifestError(source, "manifest must be a JSON object");
  const { architecture } = json as Record<string, unknown>;
  if (typeof architecture !== "string" || architecture.length === 0)
    throw new ManifestError(source, '"architecture" must be a non-empty string');
  return familyFor(architecture, source).parseManifest(json as Record<string, unknown>, source);
}

/**
 * Stems a separation produces, in order, derived ones included: for MDX-Net
 * single-stem models the primary and its secondary (mixture − primary); for
 * multi-stem models every output stem plus `backing` (mixture − vocals) when
 * there is a vocals stem.
 */
export function outputStemNames(manifest: SeparationManifest): string[] {
  return familyFor(manifest.architecture, manifest.name).outputStems(manifest);
}
