import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { Type } from "typebox";
import { ManifestBaseSchema, ManifestError, manifestReader } from "../manifest.ts";
import type { FamilyDescriptor } from "./family.ts";
import { htdemucsDescriptor, type HtdemucsManifest } from "./htdemucs/manifest.ts";
import { mdxDescriptor, type MdxManifest } from "./mdx/manifest.ts";
import { bsRoformerDescriptor, mdx23cDescriptor, melBandRoformerDescriptor, type MsstManifest } from "./msst/manifest.ts";

/** Any registered family's manifest: one member per family, told apart by `architecture`. */
export type SeparationManifest = MdxManifest | HtdemucsManifest | MsstManifest;

/**
 * Every family, by its manifest side: what a manifest's `architecture` may name. The loaders are
 * registered against these names in `families/index.ts` (a name without one does not compile).
 * Kept apart from the families' models (onnxruntime), so the API and the CLI can list and check
 * the installed models without loading a session (`@mixdown/separation/installed-models`).
 */
export const FAMILY_DESCRIPTORS = [
  mdxDescriptor,
  htdemucsDescriptor,
  bsRoformerDescriptor,
  melBandRoformerDescriptor,
  mdx23cDescriptor,
] as const;

/** The `architecture` a manifest may name. */
export type Architecture = (typeof FAMILY_DESCRIPTORS)[number]["architecture"];

const READERS: ReadonlyMap<string, FamilyDescriptor<SeparationManifest>> = new Map<string, FamilyDescriptor<SeparationManifest>>(
  FAMILY_DESCRIPTORS.map((d) => [d.architecture, d as FamilyDescriptor<SeparationManifest>]),
);

/** The `architecture` values a manifest may name. */
export function knownArchitectures(): string[] {
  return [...READERS.keys()];
}

/** The error for a manifest naming an architecture no family runs. */
export function unsupportedArchitecture(architecture: string, source: string): ManifestError {
  const known = knownArchitectures()
    .map((a) => `"${a}"`)
    .join(", ");
  return new ManifestError(source, `unsupported architecture "${architecture}" (known: ${known})`);
}

function readerFor(architecture: string, source: string) {
  const reader = READERS.get(architecture);
  if (!reader) throw unsupportedArchitecture(architecture, source);
  return reader;
}

/** What a manifest must hold before a family can read it: the architecture that names the family. */
const readArchitecture = manifestReader(Type.Object({ architecture: ManifestBaseSchema.properties.architecture }));

/** Validates parsed JSON as a manifest of whichever family its `architecture` names. */
export function parseManifest(json: unknown, source: string): SeparationManifest {
  const { architecture } = readArchitecture(json, source);
  return readerFor(architecture, source).parseManifest(json as Record<string, unknown>, source);
}

/**
 * Stems a separation produces, in order, derived ones included: for MDX-Net
 * single-stem models the primary and its secondary (mixture − primary); for
 * multi-stem models every output stem plus `backing` (mixture − vocals) when
 * there is a vocals stem.
 */
export function outputStemNames(manifest: SeparationManifest): string[] {
  return readerFor(manifest.architecture, manifest.name).outputStems(manifest);
}

/** Whether the manifest's family yields as it reads (FamilyDescriptor.readsInputOnce). */
export function readsInputOnce(manifest: SeparationManifest): boolean {
  return readerFor(manifest.architecture, manifest.name).readsInputOnce;
}

/** A manifest file's text as JSON; bad JSON is a ManifestError naming the file. */
export function parseManifestJson(text: string, source: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ManifestError(source, `invalid JSON: ${(err as Error).message}`);
  }
}

export interface ManifestDirectory {
  /** valid manifests, by file name, each with the path it was read from */
  manifests: { path: string; manifest: SeparationManifest }[];
  /** manifests that failed validation, so an operator sees why a model is missing */
  invalid: { path: string; error: string }[];
}

/**
 * Every `*.json` manifest directly in `modelsDir`, read and validated (a missing directory holds
 * none): what the registry loads by name and readInstalledModels lists, read the one way.
 */
export async function readManifestDirectory(modelsDir: string): Promise<ManifestDirectory> {
  let files: string[];
  try {
    files = (await readdir(modelsDir)).filter((f) => f.endsWith(".json")).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { manifests: [], invalid: [] };
    throw err;
  }
  const directory: ManifestDirectory = { manifests: [], invalid: [] };
  for (const file of files) {
    const path = join(modelsDir, file);
    try {
      directory.manifests.push({ path, manifest: parseManifest(parseManifestJson(await readFile(path, "utf8"), path), path) });
    } catch (err) {
      directory.invalid.push({ path, error: (err as Error).message });
    }
  }
  return directory;
}
