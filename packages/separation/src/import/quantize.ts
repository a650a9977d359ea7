// Dynamic int8 quantisation of a model's linear layers, as onnxruntime's own
// `quantize_dynamic` writes it (weight type QInt8, per tensor, symmetric; no calibration data):
// every MatMul (and plain Gemm) whose weight is a constant 2-D tensor becomes
//   DynamicQuantizeLinear(A) -> MatMulInteger(A_q, W_q, A_zero, 0) -> Cast -> Mul(A_scale * W_scale)
// which onnxruntime's graph optimiser fuses into its DynamicQuantizeMatMul kernel. The weights are
// stored as int8 (a quarter of their float size); the activations are quantised per run, to uint8,
// from their own range. Convolutions and the attention's activation-by-activation products stay
// float. It is an option: the outputs differ from the float model's (the SNR is stated in
// docs/separation.md), in exchange for less memory and a faster transformer.
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import onnxProto from "onnx-proto";
import { ImportProblem } from "@mixdown/python";
import { readManifestDirectory } from "../families/manifests.ts";
import { MODEL_NAME } from "./import-model.ts";

const { onnx } = onnxProto;
const { FLOAT, INT8 } = onnx.TensorProto.DataType;

/** Weights smaller than this stay float, as onnxruntime's quantiser leaves tiny layers alone. */
const MIN_WEIGHTS = 4096;

export interface QuantizedGraph {
  bytes: Uint8Array;
  /** MatMul and Gemm nodes now running on int8 weights */
  layers: number;
}

/** The quantised model of an ONNX file's bytes (see the top of this file). */
export function quantizeLinearLayersInt8(model: Uint8Array): QuantizedGraph {
  const decoded = onnx.ModelProto.decode(model);
  const graph = decoded.graph;
  if (!graph) throw new Error("the ONNX file has no graph");
  const opset = (decoded.opsetImport ?? []).find((o) => !o.domain)?.version;
  if (opset !== undefined && Number(opset) < 11)
    throw new Error(`the ONNX file's opset is ${Number(opset)}; int8 quantisation needs 11 or later`);
  const initializers = new Map((graph.initializer ?? []).map((t) => [t.name ?? "", t]));
  const nodes: onnxProto.onnx.INodeProto[] = [];
  const added: onnxProto.onnx.ITensorProto[] = [];
  let layers = 0;
  for (const node of graph.node ?? []) {
    const weights = linearWeights(node, initializers);
    if (!weights) {
      nodes.push(node);
      continue;
    }
    layers++;
    const p = `mixdown_int8_${layers}_`;
    let maxAbs = 0;
    for (const v of weights.values) maxAbs = Math.max(maxAbs, Math.abs(v));
    const scale = Math.fround(Math.max(maxAbs, 1e-12) / 127);
    const q = new Int8Array(weights.values.length);
    for (let i = 0; i < q.length; i++) q[i] = Math.max(-127, Math.min(127, roundHalfEven(weights.values[i]! / scale)));
    added.push(
      { name: `${p}w`, dims: weights.dims, dataType: INT8, rawData: new Uint8Array(q.buffer) },
      { name: `${p}w_scale`, dims: [], dataType: FLOAT, rawData: new Uint8Array(Float32Array.of(scale).buffer) },
      { name: `${p}w_zero`, dims: [], dataType: INT8, rawData: new Uint8Array(1) },
    );
    const input = node.input![0]!;
    const output = node.output![0]!;
    nodes.push(
      { opType: "DynamicQuantizeLinear", input: [input], output: [`${p}a`, `${p}a_scale`, `${p}a_zero`], name: `${p}quantize` },
      {
        opType: "MatMulInteger",
        input: [`${p}a`, `${p}w`, `${p}a_zero`, `${p}w_zero`],
        output: [`${p}int32`],
        name: `${p}matmul`,
      },
      { opType: "Cast", input: [`${p}int32`], output: [`${p}float`], attribute: [castTo(FLOAT)], name: `${p}cast` },
      { opType: "Mul", input: [`${p}a_scale`, `${p}w_scale`], output: [`${p}scale`], name: `${p}scale` },
    );
    if (weights.bias) {
      nodes.push(
        { opType: "Mul", input: [`${p}float`, `${p}scale`], output: [`${p}scaled`], name: `${p}rescale` },
        { opType: "Add", input: [`${p}scaled`, weights.bias], output: [output], name: `${p}bias` },
      );
    } else {
      nodes.push({ opType: "Mul", input: [`${p}float`, `${p}scale`], output: [output], name: `${p}rescale` });
    }
  }
  const used = new Set(nodes.flatMap((n) => n.input ?? []));
  graph.node = nodes;
  graph.initializer = [...(graph.initializer ?? []).filter((t) => used.has(t.name ?? "")), ...added];
  return { bytes: onnx.ModelProto.encode(decoded).finish(), layers };
}

/** The float weights [K, N] of a MatMul or plain Gemm (A·B + C) whose B is a constant, or undefined. */
function linearWeights(
  node: onnxProto.onnx.INodeProto,
  initializers: Map<string, onnxProto.onnx.ITensorProto>,
): { values: Float32Array; dims: number[]; bias?: string } | undefined {
  const [a, b, c] = node.input ?? [];
  if (!a || !b) return undefined;
  let transposed = false;
  if (node.opType === "Gemm") {
    const attr = new Map((node.attribute ?? []).map((x) => [x.name, x]));
    if (Number(attr.get("transA")?.i ?? 0) !== 0) return undefined;
    if ((attr.get("alpha")?.f ?? 1) !== 1 || (attr.get("beta")?.f ?? 1) !== 1) return undefined;
    transposed = Number(attr.get("transB")?.i ?? 0) === 1;
  } else if (node.opType !== "MatMul" || (node.input ?? []).length !== 2) {
    return undefined;
  }
  const tensor = initializers.get(b);
  if (!tensor || tensor.dataType !== FLOAT || (tensor.dims ?? []).length !== 2) return undefined;
  const [rows, cols] = (tensor.dims ?? []).map(Number) as [number, number];
  if (rows * cols < MIN_WEIGHTS) return undefined;
  const stored = floatValues(tensor, rows * cols);
  if (!transposed) return { values: stored, dims: [rows, cols], ...(c ? { bias: c } : {}) };
  // Gemm's transB: B is stored [N, K]; MatMulInteger wants [K, N]
  const values = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let k = 0; k < cols; k++) values[k * rows + r] = stored[r * cols + k]!;
  return { values, dims: [cols, rows], ...(c ? { bias: c } : {}) };
}

function floatValues(tensor: onnxProto.onnx.ITensorProto, count: number): Float32Array {
  if (tensor.rawData && tensor.rawData.length > 0) {
    const raw = tensor.rawData;
    const copy = new Uint8Array(raw.length);
    copy.set(raw);
    return new Float32Array(copy.buffer, 0, count);
  }
  if (tensor.floatData && tensor.floatData.length === count) return Float32Array.from(tensor.floatData);
  throw new Error(`initializer ${tensor.name} holds its data outside the file; quantising it is not supported`);
}

function castTo(type: number): onnxProto.onnx.IAttributeProto {
  return { name: "to", type: onnx.AttributeProto.AttributeType.INT, i: type };
}

/** numpy's rounding (onnxruntime's quantiser rounds with it): halves to even. */
function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

export interface QuantizedModel {
  name: string;
  manifestPath: string;
  /** the ONNX files written, one per file the model runs (a bag's members each have one) */
  onnxPaths: string[];
  layers: number;
  bytesBefore: number;
  bytesAfter: number;
}

/**
 * Writes `<as>.json` and its ONNX files beside an installed model `name`: the same manifest with
 * its own name and files (`<as>.onnx`; a bag's further members `<as>-2.onnx`, ...), the model's
 * linear layers in int8. Refuses an `as` that is installed already.
 */
export async function quantizeInstalledModel(modelsDir: string, name: string, as = `${name}-int8`): Promise<QuantizedModel> {
  if (!MODEL_NAME.test(as))
    throw new ImportProblem(`"${as}" is not a model name (letters, digits, "_", "." and "-", starting with a letter or digit)`);
  const { manifests } = await readManifestDirectory(modelsDir);
  const found = manifests.find((m) => m.manifest.name === name);
  if (!found) throw new ImportProblem(`no model named "${name}" in ${modelsDir}`);
  if (manifests.some((m) => m.manifest.name === as)) throw new ImportProblem(`a model named "${as}" is installed already`);
  // the manifest as written (its own fields and order), not as parsed
  const manifest = JSON.parse(await readFile(found.path, "utf8")) as Record<string, unknown> & {
    file: string;
    members?: Array<Record<string, unknown> & { file: string }>;
  };
  // every file the model runs: `file`, and each member's (HTDemucs bags; the first member's is `file`)
  const sources = [...new Set([manifest.file, ...(manifest.members ?? []).map((m) => m.file)])];
  const renamed = new Map(sources.map((file, i) => [file, i === 0 ? `${as}.onnx` : `${as}-${i + 1}.onnx`]));
  let layers = 0;
  let bytesBefore = 0;
  let bytesAfter = 0;
  const written: Array<{ path: string; bytes: Uint8Array }> = [];
  for (const [file, target] of renamed) {
    const source = await readFile(join(modelsDir, file));
    const quantized = quantizeLinearLayersInt8(source);
    layers += quantized.layers;
    bytesBefore += source.length;
    bytesAfter += quantized.bytes.length;
    written.push({ path: join(modelsDir, target), bytes: quantized.bytes });
  }
  if (layers === 0) throw new ImportProblem(`${name}: the model has no linear layer with constant weights to quantise`);
  for (const { path, bytes } of written) await writeFile(path, bytes);
  const manifestPath = join(modelsDir, `${as}.json`);
  const members = manifest.members?.map((m) => ({ ...m, file: renamed.get(m.file)! }));
  const copy = { ...manifest, name: as, file: renamed.get(manifest.file)!, ...(members ? { members } : {}) };
  await writeFile(manifestPath, `${JSON.stringify(copy, null, 2)}\n`);
  return { name: as, manifestPath, onnxPaths: written.map((w) => w.path), layers, bytesBefore, bytesAfter };
}
