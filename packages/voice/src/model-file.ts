// Reads an ONNX file's signature with onnx-proto only (no onnxruntime), so the API can check an
// uploaded voice model before storing it without loading the inference runtime.
import onnxProto from "onnx-proto";
import { NATIVE_INPUTS, NATIVE_OUTPUTS } from "./native/layout.ts";

const { onnx } = onnxProto;
const T = onnx.TensorProto.DataType;

export type VoiceArchitecture = "native" | "rvc";

export class VoiceModelFileError extends Error {
  override readonly name = "VoiceModelFileError";
}

export interface VoiceModelFileInfo {
  architecture: VoiceArchitecture;
  /**
   * RVC graphs: `export` = RVC's own ONNX export (f0 and its noise drawn inside the graph);
   * `mixdown` = a `.pth` converted by Mixdown (the NSF excitation is an input); `mixdown-no-f0`
   * = the same for a model trained without f0 (no pitch, no excitation).
   */
  rvcGraph?: "export" | "mixdown" | "mixdown-no-f0";
  /** Output rate the file declares (native models), if any. */
  sampleRate?: number;
  metadata: Record<string, string>;
  inputs: Array<{ name: string; rank: number; type: string; dims: Array<number | string> }>;
  outputs: string[];
}

const TYPE_NAMES: Record<number, string> = {
  [T.FLOAT]: "float32",
  [T.INT64]: "int64",
  [T.INT32]: "int32",
  [T.FLOAT16]: "float16",
};

/** RVC v2 (f0) ONNX export: name -> [rank, element type]. */
export const RVC_SIGNATURE: Record<string, [number, string]> = {
  phone: [3, "float32"],
  phone_lengths: [1, "int64"],
  pitch: [2, "int64"],
  pitchf: [2, "float32"],
  ds: [1, "int64"],
  rnd: [3, "float32"],
};

/** A `.pth` converted by Mixdown (`python -m mixdown_voice.export_rvc`): name -> [rank, element type]. */
export const MIXDOWN_RVC_SIGNATURE: Record<string, [number, string]> = {
  phone: [3, "float32"],
  pitch: [2, "int64"],
  rnd: [3, "float32"],
  sid: [1, "int64"],
  source: [3, "float32"],
};

/** The same for a model trained without f0. */
export const MIXDOWN_RVC_NO_F0_SIGNATURE: Record<string, [number, string]> = {
  phone: [3, "float32"],
  rnd: [3, "float32"],
  sid: [1, "int64"],
};

/**
 * Decodes an ONNX model and says which known voice architecture it is: Mixdown's native voice
 * model or the RVC v2 (f0) export. Anything else (not protobuf, not a graph, other inputs, wrong
 * ranks or types) is a VoiceModelFileError naming the mismatch.
 */
export function inspectVoiceModelFile(bytes: Uint8Array): VoiceModelFileInfo {
  let model: onnxProto.onnx.ModelProto;
  try {
    model = onnx.ModelProto.decode(bytes);
  } catch (err) {
    throw new VoiceModelFileError(`the file is not an ONNX model (${(err as Error).message})`);
  }
  const graph = model.graph;
  if (!graph || !graph.node || graph.node.length === 0 || !graph.output || graph.output.length === 0) {
    throw new VoiceModelFileError("the file is not an ONNX model (no graph with nodes and outputs)");
  }
  const initializers = new Set((graph.initializer ?? []).map((i) => i.name));
  const inputs = (graph.input ?? [])
    .filter((i) => !initializers.has(i.name))
    .map((i) => ({
      name: i.name ?? "",
      rank: i.type?.tensorType?.shape?.dim?.length ?? -1,
      type: TYPE_NAMES[i.type?.tensorType?.elemType ?? -1] ?? `type ${i.type?.tensorType?.elemType}`,
      dims: (i.type?.tensorType?.shape?.dim ?? []).map((d) =>
        d.dimValue !== undefined && d.dimValue !== null && Number(d.dimValue) > 0 ? Number(d.dimValue) : (d.dimParam ?? "?"),
      ),
    }));
  const outputs = graph.output.map((o) => o.name ?? "");
  const metadata = Object.fromEntries((model.metadataProps ?? []).map((p) => [p.key ?? "", p.value ?? ""]));
  const names = new Set(inputs.map((i) => i.name));

  if (metadata["mixdown.architecture"] === "native" || NATIVE_INPUTS.every((n) => names.has(n))) {
    const missing = [...NATIVE_INPUTS.filter((n) => !names.has(n)), ...NATIVE_OUTPUTS.filter((n) => !outputs.includes(n))];
    if (missing.length > 0) throw new VoiceModelFileError(`native voice model lacks ${missing.join(", ")}`);
    const sampleRate = Number(metadata["mixdown.sample_rate"]);
    return {
      architecture: "native",
      ...(Number.isFinite(sampleRate) && sampleRate > 0 ? { sampleRate } : {}),
      metadata,
      inputs,
      outputs,
    };
  }
  if (names.has("phone") && names.has("sid")) {
    const f0 = names.has("source") || names.has("pitch");
    const problems = signatureProblems(inputs, f0 ? MIXDOWN_RVC_SIGNATURE : MIXDOWN_RVC_NO_F0_SIGNATURE);
    if (!outputs.includes("audio")) problems.push("output audio missing");
    if (problems.length > 0) throw new VoiceModelFileError(`not a converted RVC model: ${problems.join("; ")}`);
    const sampleRate = Number(metadata["mixdown.sample_rate"]);
    return {
      architecture: "rvc",
      rvcGraph: f0 ? "mixdown" : "mixdown-no-f0",
      ...(Number.isFinite(sampleRate) && sampleRate > 0 ? { sampleRate } : {}),
      metadata,
      inputs,
      outputs,
    };
  }
  if (names.has("phone")) {
    const problems: string[] = [];
    for (const [name, [rank, type]] of Object.entries(RVC_SIGNATURE)) {
      const input = inputs.find((i) => i.name === name);
      if (!input) problems.push(`input ${name} missing`);
      else if (input.rank !== rank || input.type !== type)
        problems.push(`input ${name} is rank ${input.rank} ${input.type}, expected rank ${rank} ${type}`);
    }
    const extra = inputs.filter((i) => !Object.hasOwn(RVC_SIGNATURE, i.name)).map((i) => i.name);
    if (extra.length > 0) problems.push(`unexpected inputs ${extra.join(", ")}`);
    if (!outputs.includes("audio")) problems.push("output audio missing");
    if (problems.length > 0) throw new VoiceModelFileError(`not an RVC v2 (f0) ONNX export: ${problems.join("; ")}`);
    return { architecture: "rvc", rvcGraph: "export", metadata, inputs, outputs };
  }
  const seen = inputs.map((i) => `${i.name} (rank ${i.rank} ${i.type})`).join(", ") || "none";
  throw new VoiceModelFileError(
    `unknown voice model architecture: inputs ${seen}; expected an RVC v2 export (${Object.keys(RVC_SIGNATURE).join(", ")}) or a Mixdown native voice model`,
  );
}

function signatureProblems(inputs: VoiceModelFileInfo["inputs"], signature: Record<string, [number, string]>): string[] {
  const problems: string[] = [];
  for (const [name, [rank, type]] of Object.entries(signature)) {
    const input = inputs.find((i) => i.name === name);
    if (!input) problems.push(`input ${name} missing`);
    else if (input.rank !== rank || input.type !== type)
      problems.push(`input ${name} is rank ${input.rank} ${input.type}, expected rank ${rank} ${type}`);
  }
  const extra = inputs.filter((i) => !Object.hasOwn(signature, i.name)).map((i) => i.name);
  if (extra.length > 0) problems.push(`unexpected inputs ${extra.join(", ")}`);
  return problems;
}

/**
 * Which ContentVec an RVC graph takes: `v1` models 256-d features (their `phone` input says so),
 * `v2` 768-d. Undefined for native models.
 */
export function rvcVersionOf(info: VoiceModelFileInfo): "v1" | "v2" | undefined {
  if (info.architecture !== "rvc") return undefined;
  return info.inputs.find((i) => i.name === "phone")?.dims[2] === 256 ? "v1" : "v2";
}
