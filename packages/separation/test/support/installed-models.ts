import type { InstalledModel } from "../../src/installed-models.ts";

/** An installed model as `readInstalledModels` gives it, without files: for the resolution and planning tests. */
export function installedModel(
  name: string,
  stems: string[],
  outputStems: string[],
  more: Partial<Omit<InstalledModel, "manifest">> = {},
): InstalledModel {
  const entry = {
    name,
    family: "mdx",
    sampleRate: 44100,
    stems,
    outputStems,
    file: `/models/${name}.onnx`,
    sizeBytes: 1,
    readsInputOnce: true,
    ...more,
  };
  // the manifest the entry would have been read from (an MDX-Net one at the entry's rate)
  const manifest = {
    name,
    architecture: "mdx" as const,
    file: `${name}.onnx`,
    sampleRate: entry.sampleRate,
    nFft: 4096,
    hopLength: 1024,
    dimF: 1024,
    dimT: 256,
    compensate: 1,
    primaryStem: stems[0]!,
    stems,
  };
  return { ...entry, manifest };
}
