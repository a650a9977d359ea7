"""Makes an htdemucs_ft-shaped bag for `bench:separation --upstream`: four members, each stem
taken from one member (demucs's remote/htdemucs_ft.yaml weights), every member the same
HTDemucs checkpoint. Both tools still load and run four networks, so the time and memory are a
four-model bag's; the stems equal the single model's.

    python3 make_htdemucs_bag.py CHECKPOINT.th MODELS_DIR MODEL OUT_DIR [--name htbag]

CHECKPOINT.th is the demucs file MODEL (MODELS_DIR/MODEL.json and its ONNX) was imported from.
Writes OUT_DIR/demucs/NAME.yaml with member files m0..m3.th (links to the checkpoint: demucs's
repository loader reads a folder of `<signature>.th` files and bag yamls) and OUT_DIR/NAME.json,
Mixdown's bag manifest whose four members are MODEL's ONNX file (one session each). Then:

    ./mixdown.sh bench:separation --upstream DEMUCS --models NAME --models-dir OUT_DIR \\
      --upstream-checkpoint OUT_DIR/demucs/NAME.yaml --durations 10,60,600 ...
"""

import argparse
import json
import os

MEMBERS = 4


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    parser.add_argument("models_dir")
    parser.add_argument("model")
    parser.add_argument("out_dir")
    parser.add_argument("--name", default="htbag")
    args = parser.parse_args()

    demucs_dir = os.path.join(args.out_dir, "demucs")
    os.makedirs(demucs_dir, exist_ok=True)
    signatures = [f"m{i}" for i in range(MEMBERS)]
    for signature in signatures:
        link = os.path.join(demucs_dir, f"{signature}.th")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(args.checkpoint), link)
    one_hot = [[1.0 if j == i else 0.0 for j in range(MEMBERS)] for i in range(MEMBERS)]
    with open(os.path.join(demucs_dir, f"{args.name}.yaml"), "w") as f:
        f.write(f"models: {json.dumps(signatures)}\nweights: {json.dumps(one_hot)}\n")

    with open(os.path.join(args.models_dir, f"{args.model}.json")) as f:
        single = json.load(f)
    if single.get("architecture") != "htdemucs" or len(single["members"]) != 1:
        raise SystemExit(f"{args.model}: a single HTDemucs model is needed")
    if len(single["stems"]) != MEMBERS:
        raise SystemExit(f"{args.model}: the htdemucs_ft weights are for 4 stems, not {len(single['stems'])}")
    onnx = os.path.abspath(os.path.join(args.models_dir, single["file"]))
    member = {**single["members"][0], "file": onnx}
    bag = {**single, "name": args.name, "file": onnx, "members": [member] * MEMBERS, "weights": one_hot}
    with open(os.path.join(args.out_dir, f"{args.name}.json"), "w") as f:
        json.dump(bag, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
