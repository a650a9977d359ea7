"""Converts an RVC voice model (`.pth`) to the ONNX graph Mixdown's worker runs.

    python3 -m mixdown_voice.export_rvc <model.pth> <out.onnx>

Inputs: `phone` [1,T,F] float32 (ContentVec, 100 frames/s), `pitch` [1,T] int64 (coarse; f0
models only), `rnd` [1,C,T] float32 (the prior's N(0,1) noise), `sid` [1] int64, `source`
[1,1,T·hop] float32 (the NSF excitation; f0 models only); output `audio` [1,1,T·hop]. Prints what the file is
(version, f0, sample rate, speakers, hop) as JSON on the last line of stdout; exit status 2 with a
one-line reason when the file is not a usable RVC model.
"""

import json
import os
import sys

import torch

from .rvc_synth import load


class WithoutF0(torch.nn.Module):
    """A model trained without f0 takes neither the coarse pitch nor an excitation."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, phone, noise, speaker):
        return self.model(phone, None, noise, speaker)


def main(argv):
    if len(argv) != 2:
        print("usage: python3 -m mixdown_voice.export_rvc <model.pth> <out.onnx>", file=sys.stderr)
        return 64
    source, target = argv
    torch.set_num_threads(int(os.environ.get("MIXDOWN_EXPORT_THREADS", "2")))
    try:
        # weights_only: an RVC .pth is tensors, numbers and strings; a pickle that asks for any other
        # object (the way a malicious file runs code) is refused before anything in it runs.
        checkpoint = torch.load(source, map_location="cpu", weights_only=True)
    except Exception as err:  # an unreadable pickle/zip is the file's fault
        print(f"not a PyTorch file ({type(err).__name__}: {err})", file=sys.stderr)
        return 2
    try:
        model, info = load(checkpoint)
    except (ValueError, KeyError, RuntimeError, TypeError) as err:
        print(" ".join(str(err).split())[:300], file=sys.stderr)
        return 2
    frames = 40
    features = 768 if info["version"] == "v2" else 256
    inter = info["config"][2]
    phone, noise, sid = torch.zeros(1, frames, features), torch.zeros(1, inter, frames), torch.zeros(1, dtype=torch.long)
    axes = {"phone": {1: "frames"}, "rnd": {2: "frames"}, "audio": {2: "samples"}}
    if info["f0"]:
        graph, args = model, (phone, torch.ones(1, frames, dtype=torch.long), noise, sid, torch.zeros(1, 1, frames * info["hop"]))
        names = ["phone", "pitch", "rnd", "sid", "source"]
        axes.update({"pitch": {1: "frames"}, "source": {2: "samples"}})
    else:
        graph, args, names = WithoutF0(model), (phone, noise, sid), ["phone", "rnd", "sid"]
    with torch.no_grad():
        torch.onnx.export(
            graph,
            args,
            target,
            input_names=names,
            output_names=["audio"],
            dynamic_axes=axes,
            opset_version=17,
            do_constant_folding=True,
        )
    import onnx

    graph = onnx.load(target)
    for key, value in {
        "mixdown.architecture": "rvc",
        "mixdown.sample_rate": info["sampleRate"],
        "mixdown.rvc.version": info["version"],
        "mixdown.rvc.f0": info["f0"],
        "mixdown.rvc.hop": info["hop"],
        "mixdown.rvc.speakers": info["speakers"],
    }.items():
        graph.metadata_props.add(key=key, value=str(value))
    onnx.save(graph, target)
    summary = {k: info[k] for k in ("version", "f0", "sampleRate", "speakers", "hop")}
    summary["inter"] = inter
    sys.stdout.flush()
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
