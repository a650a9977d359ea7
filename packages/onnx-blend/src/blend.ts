import { open, readFile, rename, rm } from "node:fs/promises";
import {
  DataType,
  dataTypeName,
  elementCount,
  gatherTables,
  InvalidModelError,
  isFloatType,
  parseOnnx,
  TENSOR,
  type Initializer,
  type OnnxModel,
} from "./model.ts";
import { Chunks, encodeVarint, readVarint, Wire, type Field } from "./wire.ts";

export interface BlendInput {
  /** The model file, or its bytes. */
  path?: string;
  bytes?: Uint8Array;
  /** Weight of this model in the sum (0 leaves it out, 1 alone copies it). */
  alpha: number;
  /** How errors name this model, e.g. "voice model 12" (default "model <n>"). */
  label?: string;
}

export interface BlendOptions {
  inputs: BlendInput[];
  /** Write the result here (atomically: a temporary file renamed into place) instead of returning its bytes. */
  output?: string;
}

export interface BlendResult {
  /** The blended model, when no `output` path was given. */
  bytes?: Buffer;
  path?: string;
  size: number;
  /** metadata_props of the first model, which the result carries. */
  metadata: Record<string, string>;
  /** Float initializers computed as a weighted sum / copied unchanged (non-float, or a single contributing model). */
  blended: number;
  copied: number;
  /** Lookup tables (speaker embeddings) cut to the smallest row count among the contributing models. */
  truncated: Array<{ name: string; rows: number }>;
}

/** The models cannot be blended (different architecture, names, shapes or constants). */
export class IncompatibleModelsError extends Error {}
export { InvalidModelError };

/** metadata_props keys that, when present, must agree across the blended models. */
const MUST_AGREE = [
  ["architecture", "mixdown.architecture", "model_type"],
  ["sample_rate", "mixdown.sample_rate", "sampleRate", "sr"],
];
/**
 * A 2-D float table is a speaker embedding when a Gather reads it with speaker ids (RVC's `ds`
 * input), or by its name when the export put something between the input and the Gather.
 */
const SPEAKER_TABLE_NAME = /(^|[./])(emb_g|emb_spk|spk_emb|speaker_emb\w*|sid_emb\w*)([./]|$)/i;
const SPEAKER_IDS = /^(ds|sid|spk_?id|speaker_?id|speaker)$/i;

/**
 * Blends ONNX models of one architecture into a new one: every floating-point initializer becomes
 * sum(alpha_i * w_i) computed in fp32 (fp16/bf16 widened, then rounded back; fp64 in fp64);
 * everything else (graph, nodes, non-float tensors, metadata) is the first model's, byte for byte.
 * Non-float initializers must be identical; names, types and shapes must match, except a
 * speaker-embedding table ([n_speakers, C], read by a Gather), which is cut to the smallest
 * row count among the models with a non-zero alpha, as RVC's checkpoint merge does.
 */
export async function blendOnnxModels(options: BlendOptions): Promise<BlendResult> {
  const { inputs } = options;
  if (inputs.length === 0) throw new RangeError("blendOnnxModels needs at least one input");
  inputs.forEach((input, i) => {
    if (!Number.isFinite(input.alpha) || input.alpha < 0)
      throw new RangeError(`alpha of input ${i + 1} must be a finite number >= 0 (got ${input.alpha})`);
    if (!input.path === !input.bytes) throw new TypeError(`input ${i + 1}: give exactly one of path and bytes`);
  });
  const labels = inputs.map((input, i) => input.label ?? `model ${i + 1}`);
  const models: OnnxModel[] = [];
  for (const [i, input] of inputs.entries()) {
    const bytes =
      input.bytes ??
      (await readFile(input.path!).catch((err: NodeJS.ErrnoException) => {
        throw err.code === "ENOENT" ? new InvalidModelError(`${labels[i]}: file ${input.path} does not exist`) : err;
      }));
    models.push(parseOnnx(bytes, labels[i]!));
  }
  const alphas = inputs.map((input) => input.alpha);
  const plan = planTensors(models, alphas, labels);
  const first = models[0]!;

  const onlyFirst = alphas.every((a, i) => (i === 0 ? a === 1 : a === 0));
  if (onlyFirst && plan.truncated.length === 0) {
    return finish(options, { parts: [first.bytes], length: first.bytes.length }, first, {
      blended: 0,
      copied: first.order.length,
      truncated: [],
    });
  }

  let blended = 0;
  let copied = 0;
  // One scratch buffer per model for values that are not aligned in the file, reused tensor after
  // tensor, so the blend allocates little beyond its output.
  const largest = Math.max(
    0,
    ...first.order
      .map((n) => first.initializers.get(n)!)
      .filter((t) => isFloatType(t.dataType))
      .map((t) => t.end - t.start),
  );
  const scratch = models.map(() => new Uint8Array(largest));
  const graph = new Chunks();
  for (const f of first.graphFields) {
    const slice = first.bytes.subarray(f.start, f.end);
    if (f.no !== 5 || f.wire !== Wire.Bytes) {
      graph.push(slice);
      continue;
    }
    const name = first.order[blended + copied]!;
    const rows = plan.rows.get(name);
    const tensor = first.initializers.get(name)!;
    if (!isFloatType(tensor.dataType)) {
      graph.push(slice);
      copied++;
      continue;
    }
    graph.pushMessage(5, blendTensor(models, alphas, name, rows, scratch));
    blended++;
  }
  const model = new Chunks();
  for (const f of first.fields) {
    if (f === first.graphField) model.pushMessage(7, graph);
    else model.push(first.bytes.subarray(f.start, f.end));
  }
  return finish(options, model, first, { blended, copied, truncated: plan.truncated });
}

interface Plan {
  /** Row counts of the tables to cut. */
  rows: Map<string, number>;
  truncated: Array<{ name: string; rows: number }>;
}

function planTensors(models: OnnxModel[], alphas: number[], labels: string[]): Plan {
  const first = models[0]!;
  const name1 = labels[0]!;
  for (const keys of MUST_AGREE) {
    const key = keys.find((k) => k in first.metadata);
    if (!key) continue;
    models.forEach((m, i) => {
      if (i > 0 && key in m.metadata && m.metadata[key] !== first.metadata[key]) {
        throw new IncompatibleModelsError(`${labels[i]} has ${key} ${m.metadata[key]} but ${name1} has ${first.metadata[key]}`);
      }
    });
  }
  const rows = new Map<string, number>();
  const truncated: Plan["truncated"] = [];
  let tables: Map<string, string> | undefined;
  models.forEach((m, i) => {
    if (i === 0) return;
    const missing = first.order.filter((n) => !m.initializers.has(n));
    const extra = m.order.filter((n) => !first.initializers.has(n));
    if (missing.length > 0 || extra.length > 0) {
      const list = (names: string[]) => names.slice(0, 5).join(", ") + (names.length > 5 ? ` and ${names.length - 5} more` : "");
      throw new IncompatibleModelsError(
        `${labels[i]} and ${name1} have different weights` +
          (missing.length ? `; ${labels[i]} lacks ${list(missing)}` : "") +
          (extra.length ? `; ${labels[i]} has ${list(extra)} that ${name1} lacks` : ""),
      );
    }
  });
  for (const name of first.order) {
    const t1 = first.initializers.get(name)!;
    const shapes = models.map((m) => m.initializers.get(name)!);
    shapes.forEach((t, i) => {
      if (i === 0) return;
      if (t.dataType !== t1.dataType) {
        throw new IncompatibleModelsError(
          `${name} is ${dataTypeName(t.dataType)} in ${labels[i]} but ${dataTypeName(t1.dataType)} in ${name1}`,
        );
      }
    });
    const sameShape = shapes.every((t) => t.dims.length === t1.dims.length && t.dims.every((d, k) => d === t1.dims[k]));
    if (!sameShape) {
      const other = shapes.findIndex((t) => t.dims.join() !== t1.dims.join());
      const differsInRowsOnly = isFloatType(t1.dataType) && shapes.every((t) => t.dims.length === 2 && t.dims[1] === t1.dims[1]);
      tables ??= gatherTables(first);
      const speakerTable = SPEAKER_TABLE_NAME.test(name) || SPEAKER_IDS.test(tables.get(name) ?? "");
      if (!differsInRowsOnly || !speakerTable) {
        throw new IncompatibleModelsError(
          `${name} has shape [${shapes[other]!.dims.join(", ")}] in ${labels[other]} but [${t1.dims.join(", ")}] in ${name1}`,
        );
      }
      // A speaker table: keep the rows every contributing model has.
      const contributing = shapes.filter((_, i) => alphas[i] !== 0).map((t) => t.dims[0]!);
      const keep = Math.min(...(contributing.length ? contributing : [t1.dims[0]!]));
      if (keep !== t1.dims[0]) {
        rows.set(name, keep);
        truncated.push({ name, rows: keep });
      }
    }
    if (!isFloatType(t1.dataType)) {
      shapes.forEach((t, i) => {
        if (i > 0 && !sameData(first, t1, models[i]!, t)) {
          throw new IncompatibleModelsError(
            `${name} (${dataTypeName(t1.dataType)}) differs between ${labels[i]} and ${name1}; only floating-point weights can be blended`,
          );
        }
      });
    }
  }
  return { rows, truncated };
}

function sameData(m1: OnnxModel, t1: Initializer, m2: OnnxModel, t2: Initializer): boolean {
  if (t1.dataFields.length !== t2.dataFields.length) return false;
  return t1.dataFields.every((f, k) => {
    const g = t2.dataFields[k]!;
    return f.no === g.no && Buffer.compare(m1.bytes.subarray(f.start, f.end), m2.bytes.subarray(g.start, g.end)) === 0;
  });
}

/** The first model's TensorProto with its values replaced by the weighted sum (and its dims cut when `rows` is set). */
function blendTensor(
  models: OnnxModel[],
  alphas: number[],
  name: string,
  rows: number | undefined,
  scratch: Uint8Array[],
): Chunks {
  const first = models[0]!;
  const t1 = first.initializers.get(name)!;
  const dims = rows === undefined ? t1.dims : [rows, ...t1.dims.slice(1)];
  const count = elementCount(dims);
  const wide = t1.dataType === DataType.DOUBLE;
  const out = wide ? new Float64Array(count) : new Float32Array(count);
  const terms: Array<{ alpha: number; values: Float32Array | Float64Array }> = [];
  models.forEach((m, i) => {
    if (alphas[i] === 0) return;
    const t = m.initializers.get(name)!;
    const values = readValues(m, t, name, scratch[i]!);
    if (values.length !== elementCount(t.dims)) {
      throw new InvalidModelError(
        `${name} holds ${values.length} values but its shape [${t.dims.join(", ")}] needs ${elementCount(t.dims)}`,
      );
    }
    terms.push({ alpha: alphas[i]!, values });
  });
  weightedSum(out, terms);

  const tensor = new Chunks();
  let wroteDims = false;
  let wroteData = false;
  for (const f of t1.fields) {
    if (f.no === TENSOR.dims && rows !== undefined) {
      if (!wroteDims) {
        const packed = new Chunks();
        for (const d of dims) packed.push(encodeVarint(d));
        tensor.pushMessage(TENSOR.dims, packed);
        wroteDims = true;
      }
    } else if (t1.dataFields.includes(f)) {
      if (!wroteData) {
        writeValues(tensor, t1, out);
        wroteData = true;
      }
    } else {
      tensor.push(first.bytes.subarray(f.start, f.end));
    }
  }
  if (!wroteData) writeValues(tensor, t1, out);
  return tensor;
}

/** Sums in double precision per element and rounds once to the output's type. */
function weightedSum(
  out: Float32Array | Float64Array,
  terms: Array<{ alpha: number; values: Float32Array | Float64Array }>,
): void {
  const n = out.length;
  if (terms.length === 0) return;
  const [a, b, c, d] = terms;
  if (terms.length === 1) {
    const x = a!.values,
      ax = a!.alpha;
    for (let j = 0; j < n; j++) out[j] = ax * x[j]!;
  } else if (terms.length === 2) {
    const x = a!.values,
      ax = a!.alpha,
      y = b!.values,
      ay = b!.alpha;
    for (let j = 0; j < n; j++) out[j] = ax * x[j]! + ay * y[j]!;
  } else if (terms.length === 3) {
    const x = a!.values,
      ax = a!.alpha,
      y = b!.values,
      ay = b!.alpha,
      z = c!.values,
      az = c!.alpha;
    for (let j = 0; j < n; j++) out[j] = ax * x[j]! + ay * y[j]! + az * z[j]!;
  } else if (terms.length === 4) {
    const x = a!.values,
      ax = a!.alpha,
      y = b!.values,
      ay = b!.alpha,
      z = c!.values,
      az = c!.alpha,
      w = d!.values,
      aw = d!.alpha;
    for (let j = 0; j < n; j++) out[j] = ax * x[j]! + ay * y[j]! + az * z[j]! + aw * w[j]!;
  } else {
    const acc = new Float64Array(n);
    for (const t of terms) for (let j = 0; j < n; j++) acc[j]! += t.alpha * t.values[j]!;
    out.set(acc);
  }
}

/** Values of a float initializer as fp32 (fp64 for double tensors); a view when the bytes allow it. */
function readValues(model: OnnxModel, t: Initializer, name: string, scratch: Uint8Array): Float32Array | Float64Array {
  const bytes = model.bytes;
  const fields = t.dataFields;
  const only = fields.length === 1 ? fields[0]! : undefined;
  const packed =
    only && only.wire === Wire.Bytes
      ? aligned(bytes, only, t.dataType === DataType.DOUBLE ? 8 : t.dataType === DataType.FLOAT ? 4 : 2, scratch)
      : undefined;
  switch (t.dataType) {
    case DataType.FLOAT:
      if (packed && (only!.no === TENSOR.rawData || only!.no === TENSOR.floatData))
        return new Float32Array(packed.buffer, packed.byteOffset, packed.byteLength / 4);
      if (fields.every((f) => f.no === TENSOR.floatData && f.wire === Wire.Fixed32)) {
        const view = new DataView(bytes.buffer, bytes.byteOffset);
        return Float32Array.from(fields, (f) => view.getFloat32(f.valueStart, true));
      }
      break;
    case DataType.DOUBLE:
      if (packed && (only!.no === TENSOR.rawData || only!.no === TENSOR.doubleData))
        return new Float64Array(packed.buffer, packed.byteOffset, packed.byteLength / 8);
      break;
    case DataType.FLOAT16:
    case DataType.BFLOAT16: {
      let bits: Uint16Array | undefined;
      if (packed && only!.no === TENSOR.rawData) bits = new Uint16Array(packed.buffer, packed.byteOffset, packed.byteLength / 2);
      else if (fields.every((f) => f.no === TENSOR.int32Data)) bits = Uint16Array.from(varints(bytes, fields));
      if (!bits) break;
      if (t.dataType === DataType.FLOAT16) return Float32Array.from(new Float16Array(bits.buffer, bits.byteOffset, bits.length));
      const wide = new Uint32Array(bits.length);
      for (let j = 0; j < bits.length; j++) wide[j] = bits[j]! << 16;
      return new Float32Array(wide.buffer);
    }
  }
  throw new InvalidModelError(`${name}: ${dataTypeName(t.dataType)} values stored in a way this blender does not read`);
}

/** The field's value as a view when it sits on an `align`-byte boundary, else copied to the start of `scratch`. */
function aligned(bytes: Uint8Array, f: Field, align: number, scratch: Uint8Array): Uint8Array {
  const view = bytes.subarray(f.valueStart, f.end);
  if (view.byteOffset % align === 0) return view;
  const copy = view.length <= scratch.length ? scratch.subarray(0, view.length) : new Uint8Array(view.length);
  copy.set(view);
  return copy;
}

function varints(bytes: Uint8Array, fields: Field[]): number[] {
  const out: number[] = [];
  for (const f of fields) {
    if (f.wire === Wire.Varint) out.push(f.int);
    else
      for (let p = f.valueStart; p < f.end;) {
        const [v, next] = readVarint(bytes, p);
        out.push(v);
        p = next;
      }
  }
  return out;
}

function writeValues(tensor: Chunks, t: Initializer, values: Float32Array | Float64Array): void {
  const asBytes = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  switch (t.dataType) {
    case DataType.FLOAT: {
      // Keep the first model's field: float_data stays float_data (packed), raw_data stays raw_data.
      const inFloatData = t.dataFields[0]?.no === TENSOR.floatData;
      tensor.pushBytes(inFloatData ? TENSOR.floatData : TENSOR.rawData, asBytes(values));
      return;
    }
    case DataType.DOUBLE:
      tensor.pushBytes(TENSOR.rawData, asBytes(values));
      return;
    case DataType.FLOAT16:
      tensor.pushBytes(TENSOR.rawData, asBytes(Float16Array.from(values)));
      return;
    case DataType.BFLOAT16: {
      const words = new Uint32Array(Float32Array.from(values).buffer);
      const half = new Uint16Array(words.length);
      for (let j = 0; j < words.length; j++) {
        const w = words[j]!;
        // Round to nearest even; NaN stays a quiet NaN.
        half[j] = (w & 0x7fffffff) > 0x7f800000 ? (w >>> 16) | 0x40 : (w + 0x7fff + ((w >>> 16) & 1)) >>> 16;
      }
      tensor.pushBytes(TENSOR.rawData, asBytes(half));
      return;
    }
  }
}

async function finish(
  options: BlendOptions,
  body: { parts: Uint8Array[]; length: number },
  first: OnnxModel,
  stats: Pick<BlendResult, "blended" | "copied" | "truncated">,
): Promise<BlendResult> {
  const base = { size: body.length, metadata: first.metadata, ...stats };
  if (!options.output) return { ...base, bytes: Buffer.concat(body.parts, body.length) };
  const temp = `${options.output}.partial-${process.pid}`;
  const handle = await open(temp, "w");
  try {
    for (let i = 0; i < body.parts.length; i += 256) await handle.writev(body.parts.slice(i, i + 256));
    await handle.close();
    await rename(temp, options.output);
  } catch (err) {
    await handle.close().catch(() => undefined);
    await rm(temp, { force: true });
    throw err;
  }
  return { ...base, path: options.output };
}
