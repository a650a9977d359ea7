import onnxProto from "onnx-proto";

const { onnx } = onnxProto;

export type Dim = number | string;
export type AttributeValue = number | number[] | string | { floats: number[] } | { float: number };

/** A tiny ONNX graph writer (onnx-proto) for test and measurement models. */
export class OnnxGraphBuilder {
  readonly #nodes: onnxProto.onnx.INodeProto[] = [];
  readonly #initializers: onnxProto.onnx.ITensorProto[] = [];
  readonly #inputs: onnxProto.onnx.IValueInfoProto[] = [];
  readonly #outputs: onnxProto.onnx.IValueInfoProto[] = [];
  #counter = 0;

  input(name: string, shape: Dim[], elemType = onnx.TensorProto.DataType.FLOAT): string {
    this.#inputs.push(valueInfo(name, shape, elemType));
    return name;
  }

  output(name: string, shape: Dim[], elemType = onnx.TensorProto.DataType.FLOAT): string {
    this.#outputs.push(valueInfo(name, shape, elemType));
    return name;
  }

  floatTensor(values: ArrayLike<number>, dims: number[], name = this.#fresh("const")): string {
    const data = Float32Array.from(values);
    this.#initializers.push({ name, dims, dataType: onnx.TensorProto.DataType.FLOAT, rawData: new Uint8Array(data.buffer) });
    return name;
  }

  int64Tensor(values: number[], dims: number[] = [values.length], name = this.#fresh("const")): string {
    const data = BigInt64Array.from(values.map((v) => BigInt(v)));
    this.#initializers.push({ name, dims, dataType: onnx.TensorProto.DataType.INT64, rawData: new Uint8Array(data.buffer) });
    return name;
  }

  /** Adds a node and returns its (first) output name. */
  node(opType: string, inputs: string[], attributes: Record<string, AttributeValue> = {}, output = this.#fresh(opType)): string {
    this.#nodes.push({
      opType,
      input: inputs,
      output: [output],
      name: this.#fresh(`${opType}_node`),
      attribute: Object.entries(attributes).map(([name, value]) => attribute(name, value)),
    });
    return output;
  }

  encode(opset = 18): Uint8Array {
    const model = onnx.ModelProto.fromObject({
      irVersion: 8,
      producerName: "mixdown-tests",
      opsetImport: [{ domain: "", version: opset }],
      graph: {
        name: "graph",
        node: this.#nodes,
        initializer: this.#initializers,
        input: this.#inputs,
        output: this.#outputs,
      },
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
      tensorType: {
        elemType,
        shape: { dim: shape.map((d) => (typeof d === "number" ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, value: AttributeValue): onnxProto.onnx.IAttributeProto {
  const Type = onnx.AttributeProto.AttributeType;
  if (typeof value === "number") return { name, type: Type.INT, i: value };
  if (typeof value === "string") return { name, type: Type.STRING, s: new TextEncoder().encode(value) };
  if (Array.isArray(value)) return { name, type: Type.INTS, ints: value };
  if ("floats" in value) return { name, type: Type.FLOATS, floats: value.floats };
  return { name, type: Type.FLOAT, f: value.float };
}
