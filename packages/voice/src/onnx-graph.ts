import onnxProto from "onnx-proto";

const { onnx } = onnxProto;
export const FLOAT = onnx.TensorProto.DataType.FLOAT;
export const INT64 = onnx.TensorProto.DataType.INT64;

export type Dim = number | string;
type Attribute = number | number[] | string;

/** A small ONNX graph writer (onnx-proto, IR 8) for the graphs this package generates. */
export class OnnxGraph {
  readonly #nodes: onnxProto.onnx.INodeProto[] = [];
  readonly #initializers: onnxProto.onnx.ITensorProto[] = [];
  readonly #inputs: onnxProto.onnx.IValueInfoProto[] = [];
  readonly #outputs: onnxProto.onnx.IValueInfoProto[] = [];
  #counter = 0;

  input(name: string, shape: Dim[], elemType = FLOAT): string {
    this.#inputs.push(valueInfo(name, shape, elemType));
    return name;
  }

  output(name: string, shape: Dim[], elemType = FLOAT): string {
    this.#outputs.push(valueInfo(name, shape, elemType));
    return name;
  }

  float(values: ArrayLike<number>, dims: number[], name = this.#fresh("const")): string {
    const data = Float32Array.from(values);
    this.#initializers.push({ name, dims, dataType: FLOAT, rawData: new Uint8Array(data.buffer) });
    return name;
  }

  int64(values: number[], dims: number[] = [values.length], name = this.#fresh("const")): string {
    const data = BigInt64Array.from(values.map((v) => BigInt(v)));
    this.#initializers.push({ name, dims, dataType: INT64, rawData: new Uint8Array(data.buffer) });
    return name;
  }

  node(opType: string, inputs: string[], attributes: Record<string, Attribute> = {}, output = this.#fresh(opType)): string {
    return this.nodeOutputs(opType, inputs, [output], attributes)[0]!;
  }

  /** A node with several outputs (TopK's values and indices), named by the caller. */
  nodeOutputs(opType: string, inputs: string[], outputs: string[], attributes: Record<string, Attribute> = {}): string[] {
    this.#nodes.push({
      opType,
      input: inputs,
      output: outputs,
      name: this.#fresh(`${opType}_node`),
      attribute: Object.entries(attributes).map(([name, value]) => attribute(name, value)),
    });
    return outputs;
  }

  encode(metadata: Record<string, string> = {}, opset = 17): Uint8Array {
    const model = onnx.ModelProto.fromObject({
      irVersion: 8,
      producerName: "mixdown-voice",
      opsetImport: [{ domain: "", version: opset }],
      metadataProps: Object.entries(metadata).map(([key, value]) => ({ key, value })),
      graph: { name: "graph", node: this.#nodes, initializer: this.#initializers, input: this.#inputs, output: this.#outputs },
    });
    return onnx.ModelProto.encode(model).finish();
  }

  #fresh(prefix: string): string {
    return `${prefix}_${this.#counter++}`;
  }
}

function valueInfo(name: string, shape: Dim[], elemType: number): onnxProto.onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: { elemType, shape: { dim: shape.map((d) => (typeof d === "number" ? { dimValue: d } : { dimParam: d })) } },
    },
  };
}

function attribute(name: string, value: Attribute): onnxProto.onnx.IAttributeProto {
  const { AttributeType } = onnx.AttributeProto;
  if (typeof value === "string") return { name, type: AttributeType.STRING, s: new TextEncoder().encode(value) };
  if (Array.isArray(value)) return { name, type: AttributeType.INTS, ints: value };
  return Number.isInteger(value) ? { name, type: AttributeType.INT, i: value } : { name, type: AttributeType.FLOAT, f: value };
}
