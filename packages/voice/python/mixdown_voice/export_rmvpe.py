"""Converts RVC's `rmvpe.pt` (a state dict) to ONNX: `mel` [1, 128, T] -> `hidden` [1, T, 360],
T any multiple of 32 (the input of the community's `rmvpe.onnx` too). Prints a JSON summary as
the last line of stdout; exit status 2 with a one-line reason when the file is not an RMVPE.

    python3 -m mixdown_voice.export_rmvpe <rmvpe.pt> <out.onnx>
"""

import json
import os
import sys

import torch

from .rmvpe import from_state_dict, sizes_of


def main(argv):
    if len(argv) != 2:
        print("usage: python3 -m mixdown_voice.export_rmvpe <rmvpe.pt> <out.onnx>", file=sys.stderr)
        return 64
    source, target = argv
    torch.set_num_threads(int(os.environ.get("MIXDOWN_EXPORT_THREADS", "2")))
    try:
        state = torch.load(source, map_location="cpu", weights_only=True)  # tensors only: nothing in the file runs
    except Exception as err:  # an unreadable pickle/zip is the file's fault
        print(f"not a PyTorch checkpoint ({type(err).__name__}: {err})", file=sys.stderr)
        return 2
    if isinstance(state, dict) and "model" in state and isinstance(state["model"], dict):
        state = state["model"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        print("not an RMVPE checkpoint: expected a state dict of tensors", file=sys.stderr)
        return 2
    try:
        sizes = sizes_of(state)
        model = from_state_dict(state)
    except KeyError as err:
        print(f"not an RMVPE checkpoint: it has no {err.args[0]}", file=sys.stderr)
        return 2
    except RuntimeError as err:  # load_state_dict: missing, unexpected or misshapen tensors
        print(f"not an RMVPE checkpoint: {' '.join(str(err).split())[:300]}", file=sys.stderr)
        return 2
    frames = 2 ** sizes["stages"] * 2
    with torch.no_grad():
        torch.onnx.export(
            model,
            torch.zeros(1, 128, frames),
            target,
            input_names=["mel"],
            output_names=["hidden"],
            dynamic_axes={"mel": {2: "frames"}, "hidden": {1: "frames"}},
            opset_version=17,
            do_constant_folding=True,
        )
    sys.stdout.flush()
    print(json.dumps({"sizes": sizes, "parameters": sum(v.numel() for v in state.values())}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
