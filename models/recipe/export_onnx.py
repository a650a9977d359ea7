#!/usr/bin/python3
"""Export a trained MaskNet checkpoint to ONNX with the MDX-Net signature
and write the manifest next to it.

  python3 models/recipe/export_onnx.py --ckpt /tmp/mixdown-train/vocals.pt --name vocals
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mdxlite import net_from_cfg  # noqa: E402

STEMS = ["vocals", "drums", "bass", "other"]
SPLIT_PARTS = ["lead", "harmony", "reverb"]


class VocalsOnly(torch.nn.Module):
    """4-way softmax mask net that outputs only the vocals spectrogram."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)[:, 0]


def export(net, cfg, name, models_dir, opset=17):
    net.eval()
    m = VocalsOnly(net) if name == "vocals" else net
    dummy = torch.randn(1, 4, cfg["dim_f"], cfg["dim_t"])
    os.makedirs(models_dir, exist_ok=True)
    path = os.path.join(models_dir, name + ".onnx")
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(m, dummy, tmp, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                          opset_version=opset, do_constant_folding=True)
    os.replace(tmp, path)
    man = {"name": name, "architecture": "mdx", "file": name + ".onnx", "sampleRate": 44100,
           "nFft": cfg["n_fft"], "hopLength": cfg["hop"], "dimF": cfg["dim_f"], "dimT": cfg["dim_t"],
           "compensate": 1.0}
    if name == "vocals":
        man.update(primaryStem="vocals", secondaryStem="backing", stems=["vocals"])
    elif name == "vocalsplit":
        man.update(primaryStem="lead", stems=list(SPLIT_PARTS))
    else:
        man.update(primaryStem="vocals", stems=list(STEMS))
    # onnxruntime's `all` level (blocked-layout convolutions) is no faster on these narrow networks
    # and holds 55-75 MB more per run (packages/separation/README.md, "Models: manifest format")
    man["graphOptimization"] = "extended"
    with open(os.path.join(models_dir, name + ".json"), "w") as f:
        json.dump(man, f, indent=2)
        f.write("\n")
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--name", choices=["vocals", "stems", "vocalsplit"], required=True)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    a = ap.parse_args()
    ck = torch.load(a.ckpt)
    cfg = ck["cfg"]
    net = net_from_cfg(cfg)
    net.load_state_dict(ck["model"])
    p = export(net, cfg, a.name, a.out)
    print(p, os.path.getsize(p))


if __name__ == "__main__":
    main()
