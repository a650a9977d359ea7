import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { MdxManifest } from "../../src/index.ts";
import { OnnxGraphBuilder } from "../../testing/onnx-builder.ts";

export interface TestModelSpec {
  name: string;
  sampleRate: number;
  nFft: number;
  hopLength: number;
  dimF: number;
  dimT: number;
  compensate?: number;
  /** output channel c takes input channel gather[c] (default identity) */
  gather?: [number, number, number, number];
  /** gain per output channel */
  channelGains?: [number, number, number, number];
  /** gain per STFT frame (length dimT) */
  frameGains?: number[];
  /** rank-5 output: one stem per entry, each the (gathered, scaled) input times its gain */
  stems?: { name: string; gain: number }[];
  /** single-stem manifests: primary/secondary names (default vocals/backing) */
  primaryStem?: string;
  secondaryStem?: string;
  /** a fixed batch dimension instead of a symbolic one */
  fixedBatch?: number;
}

/**
 * Writes `<name>.onnx` + `<name>.json` with the exact MDX-Net signature
 * (input [batch, 4, dimF, dimT] → output of the same shape, or
 * [batch, S, 4, dimF, dimT]) computing a linear function of the input that
 * tests can predict: Identity, channel gather/gains, frame gains, stem gains.
 */
export async function writeTestModel(dir: string, spec: TestModelSpec): Promise<MdxManifest> {
  const { dimF, dimT } = spec;
  const batch = spec.fixedBatch ?? "batch";
  const g = new OnnxGraphBuilder();
  let x = g.input("input", [batch, 4, dimF, dimT]);
  const stems = spec.stems;
  const plain = !spec.gather && !spec.channelGains && !spec.frameGains;
  if (plain && !stems) {
    g.node("Identity", [x], {}, "output");
  } else {
    if (spec.gather) x = g.node("Gather", [x, g.int64Tensor(spec.gather)], { axis: 1 });
    if (spec.channelGains || spec.frameGains) {
      const gains = new Float32Array(4 * dimT);
      for (let c = 0; c < 4; c++) {
        for (let t = 0; t < dimT; t++) gains[c * dimT + t] = (spec.channelGains?.[c] ?? 1) * (spec.frameGains?.[t] ?? 1);
      }
      x = g.node("Mul", [x, g.floatTensor(gains, [1, 4, 1, dimT])]);
    }
    if (stems) {
      const parts = stems.map((s) => g.node("Unsqueeze", [g.node("Mul", [x, g.floatTensor([s.gain], [1])]), g.int64Tensor([1])]));
      g.node("Concat", parts, { axis: 1 }, "output");
    } else {
      g.node("Identity", [x], {}, "output");
    }
  }
  g.output("output", stems ? [batch, stems.length, 4, dimF, dimT] : [batch, 4, dimF, dimT]);
  await writeFile(join(dir, `${spec.name}.onnx`), g.encode(18));

  const manifest: MdxManifest = {
    name: spec.name,
    architecture: "mdx",
    file: `${spec.name}.onnx`,
    sampleRate: spec.sampleRate,
    nFft: spec.nFft,
    hopLength: spec.hopLength,
    dimF,
    dimT,
    compensate: spec.compensate ?? 1,
    primaryStem: stems ? stems[0].name : (spec.primaryStem ?? "vocals"),
    ...(stems ? {} : { secondaryStem: spec.secondaryStem ?? "backing" }),
    stems: stems ? stems.map((s) => s.name) : [spec.primaryStem ?? "vocals"],
  };
  await writeFile(join(dir, `${spec.name}.json`), JSON.stringify(manifest, null, 2));
  return manifest;
}

/** A small, fast MDX geometry at 8 kHz: 31.25 Hz bins, 1984-sample chunks (1728 kept). */
export const SMALL = { sampleRate: 8000, nFft: 256, hopLength: 64, dimF: 129, dimT: 32 } as const;
