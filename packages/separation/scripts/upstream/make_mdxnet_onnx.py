"""Builds UVR's MDX-Net network (ConvTDFNet, from python-audio-separator's own
`audio_separator/separator/uvr_lib_v5/mdxnet.py` and `modules.py`) with random weights and exports
it to ONNX as UVR's MDX-Net models are distributed: input `input` [batch, 4, dim_f, dim_t], output
`output` of the same shape. For `bench:graph-levels` on a network of a real model's size.

    python3 make_mdxnet_onnx.py --upstream CHECKOUT --out model.onnx
        [--dim-f 3072] [--n-fft 6144] [--dim-t 256] [--g 48] [--num-blocks 11] [--l 3] [--k 3] [--bn 8]

CHECKOUT is a python-audio-separator checkout (brought with `fetch`, never committed). The
defaults are UVR's Inst HQ geometry (dim_f 3072, n_fft 6144, dim_t 256) and KUIELab's MDX-Net
block layout (11 blocks of 3 convolutions, growth 48, 3x3 kernels, TDF bottleneck 8):
16.7 M parameters, a 66.7 MB file. Needs Debian's python3-torch and python3-onnx.
"""

import argparse
import importlib.util
import os
import sys

import torch


def load_uvr_lib(checkout):
    """uvr_lib_v5 as a package of its own, without python-audio-separator's __init__ (which
    imports the whole separator: onnxruntime, librosa, ...)."""
    folder = os.path.join(checkout, "audio_separator", "separator", "uvr_lib_v5")
    spec = importlib.util.spec_from_file_location("uvr_lib_v5", os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    package = importlib.util.module_from_spec(spec)
    sys.modules["uvr_lib_v5"] = package
    spec.loader.exec_module(package)
    return importlib.import_module("uvr_lib_v5.mdxnet")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dim-f", type=int, default=3072)
    ap.add_argument("--n-fft", type=int, default=6144)
    ap.add_argument("--dim-t", type=int, default=256)
    ap.add_argument("--g", type=int, default=48)
    ap.add_argument("--num-blocks", type=int, default=11)
    ap.add_argument("--l", type=int, default=3)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--bn", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "shims"))
    mdxnet = load_uvr_lib(args.upstream)
    torch.manual_seed(args.seed)
    # ConvTDFNet(target_name, lr, optimizer, dim_c, dim_f, dim_t, n_fft, hop_length,
    #            num_blocks, l, g, k, bn, bias, overlap); "rmsprop" picks BatchNorm, as UVR's models
    net = mdxnet.ConvTDFNet("vocals", 1e-4, "rmsprop", 4, args.dim_f, args.dim_t, args.n_fft, 1024,
                            args.num_blocks, args.l, args.g, args.k, args.bn, False, 0.75).eval()
    dummy = torch.randn(1, 4, args.dim_f, args.dim_t)
    with torch.no_grad():
        torch.onnx.export(net, dummy, args.out, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, opset_version=11)
    print(f"{args.out}: {sum(p.numel() for p in net.parameters())} parameters")


if __name__ == "__main__":
    main()
