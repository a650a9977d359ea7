#!/usr/bin/env python3
"""A random-weight Piper voice in Piper's own format, and upstream's outputs for it.

    python3 make-fixture.py --piper PIPER_CHECKOUT --harness OUT/bin/harness \
        --espeak-data OUT/share/espeak-ng-data --out DIR [--speakers N]

PIPER_CHECKOUT is github.com/rhasspy/piper (73c04d8 was used). The model is upstream's own
VITS generator (src/python/piper_train/vits/models.py, SynthesizerTrn) with the hyperparameters
of piper_train's VitsModel, narrowed so the file stays small (see SIZES), and torch's default
random initialisation under a fixed seed. It is exported as src/python/piper_train/export_onnx.py
exports a trained checkpoint (weight norm removed, `infer` behind a forward taking
`input, input_lengths, scales[, sid]`, opset 15, the same names and dynamic axes), and its
`<name>.onnx.json` has the keys src/python/piper_train/preprocess.py writes, with upstream's
default phoneme id map (from the harness, i.e. piper-phonemize's DEFAULT_PHONEME_ID_MAP).

The reference (`<name>.reference.json` + `.f32` files) holds, for each text in TEXTS: the
phoneme ids of each sentence from upstream's phonemizer (the harness), and the audio upstream's
generator makes from those ids with `infer` (noise_scale 0 and noise_w 0, so the output is
deterministic; length_scale as listed), as float32, before Piper's int16 scaling.
"""
import argparse
import hashlib
import importlib.util
import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import torch

# Small enough to commit, the same layers as a real voice (real voices: 192/192/768/6 layers).
SIZES = dict(inter_channels=32, hidden_channels=32, filter_channels=64, n_heads=2, n_layers=2,
             upsample_initial_channel=64)
SAMPLE_RATE = 22050
TEXTS = [
    {"voice": "en-us", "text": "Hello, world! How are you today?", "length_scale": 1.0},
    {"voice": "en-us", "text": "Dr. Smith paid $3.50; the rest (twelve) came later.", "length_scale": 1.0},
    {"voice": "en-us", "text": "A slower sentence, with a colon: here.", "length_scale": 1.5},
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--piper", required=True, type=Path)
    parser.add_argument("--harness", required=True)
    parser.add_argument("--espeak-data", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--name", default="tiny-en_US")
    parser.add_argument("--speakers", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    # monotonic_align is a Cython extension used only by training (SynthesizerTrn.forward); infer
    # never calls it. It is stood in for so models.py imports without building it.
    align = types.ModuleType("piper_train.vits.monotonic_align")
    align.maximum_path = lambda *a: (_ for _ in ()).throw(RuntimeError("training only"))
    sys.modules["piper_train.vits.monotonic_align"] = align
    sys.path.insert(0, str(args.piper / "src" / "python"))
    from piper_train.vits.models import SynthesizerTrn  # noqa: E402

    # piper's runtime package imports onnxruntime (not in Debian); its util module alone is loaded.
    spec = importlib.util.spec_from_file_location("piper_util", args.piper / "src" / "python_run" / "piper" / "util.py")
    piper_util = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(piper_util)
    audio_float_to_int16 = piper_util.audio_float_to_int16

    id_map = json.loads(subprocess.run([args.harness, "--default-id-map"], check=True,
                                       capture_output=True, text=True).stdout)
    num_symbols = 256  # piper_phonemize's MAX_PHONEMES, what preprocess.py writes
    torch.manual_seed(args.seed)
    gin = 16 if args.speakers > 1 else 0
    # VitsModel's defaults (lightning.py) for everything SIZES does not narrow.
    model_g = SynthesizerTrn(
        n_vocab=num_symbols, spec_channels=1024 // 2 + 1, segment_size=8192 // 256,
        kernel_size=3, p_dropout=0.1, resblock="2", resblock_kernel_sizes=(3, 5, 7),
        resblock_dilation_sizes=((1, 2), (2, 6), (3, 12)), upsample_rates=(8, 8, 4),
        upsample_kernel_sizes=(16, 16, 8), n_speakers=args.speakers, gin_channels=gin,
        use_sdp=True, **SIZES)
    # export_onnx.py, from here on.
    model_g.eval()
    with torch.no_grad():
        model_g.dec.remove_weight_norm()

    def infer_forward(text, text_lengths, scales, sid=None):
        return model_g.infer(text, text_lengths, noise_scale=scales[0], length_scale=scales[1],
                             noise_scale_w=scales[2], sid=sid)[0].unsqueeze(1)

    model_g.forward = infer_forward
    sequences = torch.randint(low=0, high=num_symbols, size=(1, 50), dtype=torch.long)
    sid = torch.LongTensor([0]) if args.speakers > 1 else None
    onnx_path = args.out / f"{args.name}.onnx"
    torch.onnx.export(model=model_g, args=(sequences, torch.LongTensor([50]),
                                           torch.FloatTensor([0.667, 1.0, 0.8]), sid),
                      f=str(onnx_path), verbose=False, opset_version=15,
                      input_names=["input", "input_lengths", "scales", "sid"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch_size", 1: "phonemes"},
                                    "input_lengths": {0: "batch_size"},
                                    "output": {0: "batch_size", 1: "time"}})
    config = {
        "dataset": args.name,
        "audio": {"sample_rate": SAMPLE_RATE, "quality": "x_low"},
        "espeak": {"voice": "en-us"},
        "language": {"code": "en-us"},
        "inference": {"noise_scale": 0.667, "length_scale": 1, "noise_w": 0.8},
        "phoneme_type": "espeak",
        "phoneme_map": {},
        "phoneme_id_map": id_map,
        "num_symbols": num_symbols,
        "num_speakers": args.speakers,
        "speaker_id_map": {f"speaker_{i}": i for i in range(args.speakers)} if args.speakers > 1 else {},
        "piper_version": "1.0.0",
    }
    config_path = Path(f"{onnx_path}.json")
    config_path.write_text(json.dumps(config, ensure_ascii=False, indent=4), encoding="utf-8")

    lines = "".join(json.dumps({"text": t["text"], "voice": t["voice"]}) + "\n" for t in TEXTS)
    phonemized = subprocess.run([args.harness, "--espeak-data", args.espeak_data, "--config", str(config_path)],
                                input=lines, check=True, capture_output=True, text=True).stdout.splitlines()
    reference = {"made_by": "packages/voice/scripts/piper-reference/make-fixture.py", "seed": args.seed,
                 "speakers": args.speakers, "texts": []}
    for index, (t, line) in enumerate(zip(TEXTS, phonemized)):
        out = json.loads(line)
        sentences = []
        for s, ids in enumerate(out["ids"]):
            speaker = args.speakers - 1 if args.speakers > 1 else None
            with torch.no_grad():
                audio = model_g.infer(torch.LongTensor([ids]), torch.LongTensor([len(ids)]),
                                      sid=None if speaker is None else torch.LongTensor([speaker]),
                                      noise_scale=0.0, length_scale=t["length_scale"], noise_scale_w=0.0)[0]
            audio = audio.squeeze().numpy().astype(np.float32)
            name = f"{args.name}.ref-{index}-{s}.f32"
            audio.tofile(args.out / name)
            sentences.append({"ids": ids, "phonemes": "".join(chr(c) for c in out["phonemes"][s]),
                              "audio": name, "samples": int(audio.shape[0]),
                              "int16_sha256": hashlib.sha256(
                                  audio_float_to_int16(audio).tobytes()).hexdigest()})
        reference["texts"].append({**t, "speaker": speaker if args.speakers > 1 else None, "sentences": sentences})
    (args.out / f"{args.name}.reference.json").write_text(json.dumps(reference, ensure_ascii=False, indent=1) + "\n")
    print(onnx_path, onnx_path.stat().st_size, "bytes")
    for t in reference["texts"]:
        print(t["text"], [s["samples"] for s in t["sentences"]])


if __name__ == "__main__":
    main()
