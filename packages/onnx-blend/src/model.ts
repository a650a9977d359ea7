import { decodeUtf8, readVarint, scanFields, Wire, WireError, type Field } from "./wire.ts";

/** Field numbers of onnx.proto (IR version 3 and later) that blending reads. */
const MODEL_GRAPH = 7;
const MODEL_METADATA_PROPS = 14;
const GRAPH_NODE = 1;
const GRAPH_INITIALIZER = 5;
const NODE_INPUT = 1;
const NODE_OP_TYPE = 4;
const ENTRY_KEY = 1;
const ENTRY_VALUE = 2;
export const TENSOR = {
  dims: 1,
  dataType: 2,
  floatData: 4,
  int32Data: 5,
  stringData: 6,
  int64Data: 7,
  name: 8,
  rawData: 9,
  doubleData: 10,
  uint64Data: 11,
  dataLocation: 14,
} as const;
const DATA_FIELDS: ReadonlySet<number> = new Set([
  TENSOR.floatData,
  TENSOR.int32Data,
  TENSOR.stringData,
  TENSOR.int64Data,
  TENSOR.rawData,
  TENSOR.doubleData,
  TENSOR.uint64Data,
]);

export const DataType = { FLOAT: 1, FLOAT16: 10, DOUBLE: 11, BFLOAT16: 16 } as const;
const DATA_TYPE_NAMES: Record<number, string> = {
  1: "float32",
  2: "uint8",
  3: "int8",
  4: "uint16",
  5: "int16",
  6: "int32",
  7: "int64",
  8: "string",
  9: "bool",
  10: "float16",
  11: "float64",
  12: "uint32",
  13: "uint64",
  14: "complex64",
  15: "complex128",
  16: "bfloat16",
};
export const dataTypeName = (t: number) => DATA_TYPE_NAMES[t] ?? `type ${t}`;
export const isFloatType = (t: number) =>
  t === DataType.FLOAT || t === DataType.FLOAT16 || t === DataType.DOUBLE || t === DataType.BFLOAT16;

/** One initializer, located in its model's bytes. */
export interface Initializer {
  name: string;
  dataType: number;
  dims: number[];
  /** The TensorProto message: `bytes[start, end)`. */
  start: number;
  end: number;
  fields: Field[];
  /** The fields carrying the values (normally one raw_data field). */
  dataFields: Field[];
}

export interface OnnxModel {
  bytes: Uint8Array;
  /** Top-level ModelProto fields. */
  fields: Field[];
  graphField: Field;
  graphFields: Field[];
  metadata: Record<string, string>;
  initializers: Map<string, Initializer>;
  /** Initializer names in file order. */
  order: string[];
}

export class InvalidModelError extends Error {}

/** Locates the metadata, the graph and every initializer of an ONNX file (nothing is copied). */
export function parseOnnx(bytes: Uint8Array, label: string): OnnxModel {
  try {
    const fields = scanFields(bytes);
    const graphField = fields.find((f) => f.no === MODEL_GRAPH && f.wire === Wire.Bytes);
    if (!graphField) throw new InvalidModelError(`${label} is not an ONNX model (no graph)`);
    const metadata: Record<string, string> = {};
    for (const f of fields) {
      if (f.no !== MODEL_METADATA_PROPS || f.wire !== Wire.Bytes) continue;
      const entry = scanFields(bytes, f.valueStart, f.end);
      const key = entry.find((e) => e.no === ENTRY_KEY);
      const value = entry.find((e) => e.no === ENTRY_VALUE);
      if (key) metadata[decodeUtf8(bytes, key)] = value ? decodeUtf8(bytes, value) : "";
    }
    const graphFields = scanFields(bytes, graphField.valueStart, graphField.end);
    const initializers = new Map<string, Initializer>();
    const order: string[] = [];
    for (const f of graphFields) {
      if (f.no !== GRAPH_INITIALIZER || f.wire !== Wire.Bytes) continue;
      const tensor = parseTensor(bytes, f.valueStart, f.end, label);
      if (initializers.has(tensor.name)) throw new InvalidModelError(`${label} has two initializers named ${tensor.name}`);
      initializers.set(tensor.name, tensor);
      order.push(tensor.name);
    }
    return { bytes, fields, graphField, graphFields, metadata, initializers, order };
  } catch (err) {
    if (err instanceof WireError) throw new InvalidModelError(`${label} is not a readable ONNX file (${err.message})`);
    throw err;
  }
}

function parseTensor(bytes: Uint8Array, start: number, end: number, label: string): Initializer {
  const fields = scanFields(bytes, start, end);
  let name = "";
  let dataType = 0;
  const dims: number[] = [];
  const dataFields: Field[] = [];
  for (const f of fields) {
    if (f.no === TENSOR.name && f.wire === Wire.Bytes) name = decodeUtf8(bytes, f);
    else if (f.no === TENSOR.dataType && f.wire === Wire.Varint) dataType = f.int;
    else if (f.no === TENSOR.dims && f.wire === Wire.Varint) dims.push(f.int);
    else if (f.no === TENSOR.dims && f.wire === Wire.Bytes) {
      for (let p = f.valueStart; p < f.end;) {
        const [d, next] = readVarint(bytes, p);
        dims.push(d);
        p = next;
      }
    } else if (f.no === TENSOR.dataLocation && f.wire === Wire.Varint && f.int === 1) {
      throw new InvalidModelError(
        `${label}: initializer ${name || "(unnamed)"} keeps its data in an external file; save the model with its weights inside`,
      );
    } else if (DATA_FIELDS.has(f.no)) dataFields.push(f);
  }
  return { name, dataType, dims, start, end, fields, dataFields };
}

/**
 * Initializers read by a Gather node as its data input, with the name of the indices: lookup
 * tables, such as RVC's speaker embedding (`emb_g.weight`, [n_speakers, C], indexed by `ds`).
 */
export function gatherTables(model: OnnxModel): Map<string, string> {
  const tables = new Map<string, string>();
  for (const f of model.graphFields) {
    if (f.no !== GRAPH_NODE || f.wire !== Wire.Bytes) continue;
    const node = scanFields(model.bytes, f.valueStart, f.end);
    const op = node.find((n) => n.no === NODE_OP_TYPE);
    if (!op || decodeUtf8(model.bytes, op) !== "Gather") continue;
    const [data, indices] = node.filter((n) => n.no === NODE_INPUT);
    if (data && indices) tables.set(decodeUtf8(model.bytes, data), decodeUtf8(model.bytes, indices));
  }
  return tables;
}

export const elementCount = (dims: number[]) => dims.reduce((a, b) => a * b, 1);
