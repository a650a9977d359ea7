import type { SeparationModelEntry } from "../../src/model-catalog.ts";

/** An installed model's catalogue entry as `readSeparationModels` gives it, without files: for the resolution and planning tests. */
export function modelEntry(
  name: string,
  stems: string[],
  outputStems: string[],
  more: Partial<SeparationModelEntry> = {},
): SeparationModelEntry {
  return {
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
}
