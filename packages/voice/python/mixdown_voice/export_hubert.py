"""Converts a HuBERT/ContentVec checkpoint (fairseq's `hubert_base.pt` layout) to the two ONNX
feature extractors RVC models take: `source` [1,1,N] 16 kHz -> `embed` [1,T,768] from layer 12
(RVC v2; the community's vec-768-layer-12.onnx) and, when the checkpoint has `final_proj`,
[1,T,256] from layer 9 through it (RVC v1; vec-256-layer-9.onnx). A checkpoint with fewer than 12
layers (test models) uses its last layer for v2 and the one before for v1.

    python3 -m mixdown_voice.export_hubert <checkpoint.pt> <v2 out.onnx> [<v1 out.onnx>]

Prints a JSON summary as the last line of stdout; exit status 2 with a one-line reason when the
file is not a HuBERT checkpoint.
"""

import json
import os
import pickle
import sys
import types

import torch

from .hubert import from_checkpoint


class _Stub:
    """Stands in for a class the checkpoint names but this Python lacks (fairseq's or omegaconf's
    configuration objects): only the tensors in `model` are needed."""

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        if isinstance(state, dict):
            self.__dict__.update(state)


class _LenientUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        try:
            return super().find_class(module, name)
        except (ImportError, AttributeError):
            return _Stub


def load_leniently(path):
    """torch.load, with classes this Python lacks unpickled as stubs. Debian's torch 1.13.1 ignores
    a `pickle_module` argument, so the module torch.serialization unpickles with is swapped for
    the call (this converter is a one-shot process)."""
    lenient = types.ModuleType("lenient_pickle")
    lenient.__dict__.update(vars(pickle))
    lenient.Unpickler = _LenientUnpickler
    lenient.load = lambda f, **kw: _LenientUnpickler(f, **kw).load()
    original = torch.serialization.pickle
    torch.serialization.pickle = lenient
    try:
        return torch.load(path, map_location="cpu")
    finally:
        torch.serialization.pickle = original


class Features(torch.nn.Module):
    def __init__(self, model, layer, project):
        super().__init__()
        self.model = model
        self.layer = layer
        self.project = project

    def forward(self, source):
        return self.model(source[:, 0], self.layer, self.project)


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: python3 -m mixdown_voice.export_hubert <checkpoint.pt> <v2.onnx> [<v1.onnx>]", file=sys.stderr)
        return 64
    torch.set_num_threads(int(os.environ.get("MIXDOWN_EXPORT_THREADS", "2")))
    try:
        checkpoint = load_leniently(argv[0])
    except Exception as err:  # an unreadable pickle/zip (or one naming classes not installed) is the file's fault
        print(f"not a readable PyTorch checkpoint ({type(err).__name__}: {err})", file=sys.stderr)
        return 2
    try:
        model, layers = from_checkpoint(checkpoint)
    except (ValueError, KeyError, RuntimeError) as err:
        print(" ".join(str(err).split())[:300], file=sys.stderr)
        return 2
    v2_layer = 12 if layers >= 12 else layers
    v1_layer = 9 if layers >= 12 else max(1, layers - 1)
    outputs = [(argv[1], v2_layer, False)]
    if len(argv) == 3 and hasattr(model, "final_proj"):
        outputs.append((argv[2], v1_layer, True))
    written = []
    for path, layer, project in outputs:
        with torch.no_grad():
            torch.onnx.export(
                Features(model, layer, project),
                torch.zeros(1, 1, 16000),
                path,
                input_names=["source"],
                output_names=["embed"],
                dynamic_axes={"source": {2: "samples"}, "embed": {1: "frames"}},
                opset_version=17,
            )
        written.append({"path": path, "layer": layer, "width": int(model.final_proj.out_features if project else model.post_extract_proj.out_features)})
    sys.stdout.flush()
    print(json.dumps({"layers": layers, "outputs": written}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
