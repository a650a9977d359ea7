"""The floating-point operations of one run of an ONNX graph at batch 1 (for bench:flops).

    onnx_flops.py expose MODEL.onnx OUT.onnx [SIZES]    # MODEL with the counted nodes' tensors as outputs
    onnx_flops.py count MODEL.onnx SHAPES.json [SIZES]  # {"file", "gflop", "nodes", "uncounted", "ops"}
    onnx_flops.py matmul N OUT.onnx             # an N x N by N x N MatMul, for the machine's peak

SIZES, a JSON object, gives symbolic input dimensions by name (`{"frames": 1100}`: an RVC piece of
11 s, not one frame); the rest are 1. Shapes come from onnx's shape inference with symbolic input
dimensions set so (one chunk at batch 1 without SIZES), and,
where inference cannot follow the graph (HTDemucs pads its time branch by amounts it computes),
from SHAPES.json: the dimensions onnxruntime gave the exposed tensors in one run (bench-flops.ts
writes it). Counted, as multiply-adds x 2: MatMul, Gemm, Conv, ConvTranspose and Einsum, the
operators that carry a network's arithmetic. Element-wise operators, normalisations and softmax
are left out, as the usual counters (fvcore, thop, ptflops) leave them out.
"""

import json
import sys
from math import prod

import onnx
from onnx import TensorProto, helper, shape_inference

COUNTED = {"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum"}


def load_sized(path, sizes):
    model = onnx.load(path)
    for value in model.graph.input:
        for d in value.type.tensor_type.shape.dim:
            if not d.HasField("dim_value"):
                d.dim_value = sizes.get(d.dim_param, 1)
    return model


def inferred_shapes(model):
    inferred = shape_inference.infer_shapes(model, data_prop=True)
    known = {}
    for value in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        dims = value.type.tensor_type.shape.dim
        if dims and all(d.HasField("dim_value") for d in dims):
            known[value.name] = [d.dim_value for d in dims]
    for init in inferred.graph.initializer:
        known[init.name] = list(init.dims)
    return inferred, known


def counted_nodes(graph):
    for node in graph.node:
        if node.op_type in COUNTED:
            yield node


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def node_flops(node, shape):
    ins = [shape.get(n) for n in node.input]
    out = shape.get(node.output[0])
    op = node.op_type
    if op == "MatMul":
        if ins[0] is None or out is None:
            return None
        return 2 * prod(out) * ins[0][-1]
    if op == "Gemm":
        if ins[0] is None or out is None:
            return None
        k = ins[0][0] if attr(node, "transA", 0) else ins[0][1]
        return 2 * prod(out) * k
    if op == "Conv":
        # out [N, Cout, *spatial], weight [Cout, Cin/group, *kernel]
        if ins[1] is None or out is None:
            return None
        return 2 * prod(out) * prod(ins[1][1:])
    if op == "ConvTranspose":
        # every input element meets a kernel: x [N, Cin, *spatial], weight [Cin, Cout/group, *kernel]
        if ins[0] is None or ins[1] is None:
            return None
        return 2 * prod(ins[0]) * prod(ins[1][1:])
    if op == "Einsum":
        equation = attr(node, "equation")
        if isinstance(equation, bytes):
            equation = equation.decode()
        if any(i is None for i in ins):
            return None
        sizes = {}
        for term, dims in zip(equation.replace(" ", "").split("->")[0].split(","), ins):
            for letter, size in zip(term, dims):
                sizes[letter] = size
        return 2 * prod(sizes.values())
    return 0


def expose(path, out_path, sizes):
    model = load_sized(path, sizes)
    _, known = inferred_shapes(model)
    outputs = {o.name for o in model.graph.output}
    for node in counted_nodes(model.graph):
        for name in [node.input[0], node.output[0]]:
            if name and name not in known and name not in outputs:
                model.graph.output.append(helper.make_empty_tensor_value_info(name))
                outputs.add(name)
    onnx.save(model, out_path)


def count(path, shapes_path, sizes):
    model = load_sized(path, sizes)
    inferred, known = inferred_shapes(model)
    with open(shapes_path) as f:
        known.update(json.load(f))
    total, nodes, uncounted, ops = 0, 0, [], {}
    for node in counted_nodes(inferred.graph):
        f = node_flops(node, known)
        if f is None:
            uncounted.append(f"{node.op_type} {node.name}")
            continue
        total += f
        nodes += 1
        ops[node.op_type] = ops.get(node.op_type, 0) + f / 1e9
    return {"file": path, "gflop": total / 1e9, "nodes": nodes, "uncounted": uncounted, "ops": ops}


def matmul(n, out_path):
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])],
        "peak",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n]), helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), out_path)


if __name__ == "__main__":
    command = sys.argv[1]
    sizes = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    if command == "expose":
        expose(sys.argv[2], sys.argv[3], sizes)
    elif command == "count":
        print(json.dumps(count(sys.argv[2], sys.argv[3], sizes)))
    elif command == "matmul":
        matmul(int(sys.argv[2]), sys.argv[3])
    else:
        sys.exit(f"unknown command {command}: expose, count or matmul")
