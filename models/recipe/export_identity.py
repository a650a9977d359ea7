#!/usr/bin/python3
"""Tiny MDX-signature test models for the engine's tests (no weights).

  python3 models/recipe/export_identity.py --out DIR [--n-fft 4096] [--dim-f 1024] [--dim-t 64]

Writes into DIR:
  identity.onnx / identity.json        output = input             [B,4,dim_f,dim_t]
  identity2.onnx / identity2.json      output = [input*0.5, input*0.5]  [B,2,4,dim_f,dim_t]
  identity2z.onnx / identity2z.json    output = [input, zeros]    [B,2,4,dim_f,dim_t]
Built directly with onnx.helper (Identity / Mul / Concat / Unsqueeze ops).
"""
import argparse
import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def io(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, path)


def manifest(out, name, a, stems, secondary=None):
    m = {"name": name, "architecture": "mdx", "file": name + ".onnx", "sampleRate": 44100,
         "nFft": a.n_fft, "hopLength": a.hop, "dimF": a.dim_f, "dimT": a.dim_t, "compensate": 1.0,
         "primaryStem": stems[0]}
    if secondary:
        m["secondaryStem"] = secondary
    m["stems"] = stems
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(m, f, indent=2)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--n-fft", type=int, default=4096)
    ap.add_argument("--hop", type=int, default=1024)
    ap.add_argument("--dim-f", type=int, default=1024)
    ap.add_argument("--dim-t", type=int, default=64)
    ap.add_argument("--opset", type=int, default=13)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    shp = ["batch", 4, a.dim_f, a.dim_t]
    shp2 = ["batch", 2, 4, a.dim_f, a.dim_t]
    ops = [helper.make_opsetid("", a.opset)]

    g = helper.make_graph([helper.make_node("Identity", ["input"], ["output"])], "identity",
                          [io("input", shp)], [io("output", shp)])
    save(helper.make_model(g, opset_imports=ops, producer_name="mixdown"), os.path.join(a.out, "identity.onnx"))
    manifest(a.out, "identity", a, ["vocals"], "backing")

    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    for name, scales in (("identity2", ("half", "half")), ("identity2z", (None, "zero"))):
        nodes, outs = [], []
        for i, s in enumerate(scales):
            src = "input"
            if s is not None:
                nodes.append(helper.make_node("Mul", ["input", s], ["m%d" % i]))
                src = "m%d" % i
            nodes.append(helper.make_node("Unsqueeze", [src, "axes"], ["u%d" % i]))
            outs.append("u%d" % i)
        nodes.append(helper.make_node("Concat", outs, ["output"], axis=1))
        used = [t for t in (axes, half, zero) if t.name == "axes" or t.name in scales]
        g = helper.make_graph(nodes, name, [io("input", shp)], [io("output", shp2)], initializer=used)
        save(helper.make_model(g, opset_imports=ops, producer_name="mixdown"), os.path.join(a.out, name + ".onnx"))
        manifest(a.out, name, a, ["vocals", "other"] if name == "identity2" else ["vocals", "backing"])
    for f in sorted(os.listdir(a.out)):
        print(f, os.path.getsize(os.path.join(a.out, f)))


if __name__ == "__main__":
    main()
