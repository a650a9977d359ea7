"""Converts one model file to ONNX for Mixdown and prints its manifest (JSON) as the last line of stdout.

Exit status 2 with a one-line message on stderr when the file cannot be imported as it is
(a config that does not fit the state dict, a missing key, ...); anything else is a bug.
"""

import argparse
import importlib
import json
import os
import sys

from .errors import ImportProblem

FAMILIES = ("htdemucs", "bs_roformer", "mel_band_roformer", "mdx23c")


def main() -> int:
    parser = argparse.ArgumentParser(prog="mixdown_export")
    parser.add_argument("family", choices=FAMILIES)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--config")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--name", required=True)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(int(os.environ.get("MIXDOWN_EXPORT_THREADS", "2")))
    # torch 1.13 checks types at export when beartype is importable, and then fails on RoFormers
    os.environ.setdefault("TORCH_ONNX_EXPERIMENTAL_RUNTIME_TYPE_CHECK", "DISABLED")
    try:
        family = importlib.import_module(f".{args.family}", __package__)
    except ModuleNotFoundError as err:
        if err.name and err.name.endswith(args.family):
            print(f"this Mixdown cannot convert {args.family} models yet", file=sys.stderr)
            return 2
        raise
    try:
        manifest = family.export(args.checkpoint, args.config, args.out_dir, args.name)
    except ImportProblem as problem:
        print(str(problem).replace("\n", " "), file=sys.stderr)
        return 2
    sys.stdout.flush()
    print(json.dumps(manifest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
