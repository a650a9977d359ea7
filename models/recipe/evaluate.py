#!/usr/bin/python3
"""Held-out evaluation with the engine's chunking (Hann overlap-add of
trimmed chunks, bins >= dim_f and bins 0..2 zeroed).

  python3 models/recipe/evaluate.py --ckpt /tmp/mixdown-train/vocals.pt \
      --name vocals --valid /tmp/mixdown-data/valid [--json out.json]
  python3 models/recipe/evaluate.py --ckpt /tmp/mixdown-train/vocalsplit.pt \
      --name vocalsplit --valid /tmp/mixdown-vocalsplit/valid

SDR per clip = 10 log10(sum s^2 / sum (s - s_hat)^2) over the whole clip;
reports medians. Baseline "centre": vocals = (L+R)/2 in both channels,
backing = mixture - that; baseline "mixture": the mixture as estimate.
"""
import argparse
import glob
import json
import os
import sys
import time

import numpy as np
import torch
from scipy.io import wavfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import median_ci95  # noqa: E402
from mdxlite import Spec, net_from_cfg, sdr, separate  # noqa: E402

STEMS = ["vocals", "drums", "bass", "other"]
SPLIT_PARTS = ["lead", "harmony", "reverb"]


def rd(p):
    _, x = wavfile.read(p)
    return (x.astype(np.float32) / 32768.0).T


def oracles(voc, ref, n_fft=4096, hop=1024, size=3):
    """SDR of each part under two ideals built from the true parts (one STFT of each signal serves
    both), as a pair of dicts:
    - the ideal ratio mask (|part| / sum |parts| per bin and channel, whole-clip STFT): what a
      real-valued mask per channel could reach, a ceiling for such masks on this data;
    - the ideal 2x2 multichannel Wiener filter: per bin, the part's spatial covariance times the
      inverse of the sum's, each averaged over size x size neighbouring bins and frames (so not a
      per-bin identity): what a network whose output channels also take the other input channel
      (`--cross`) could reach with perfect statistics."""
    from scipy.ndimage import uniform_filter

    win = torch.hann_window(n_fft)
    spec = lambda x: torch.stft(torch.as_tensor(x), n_fft, hop, window=win, return_complex=True).numpy()
    wave = lambda X: torch.istft(torch.as_tensor(X), n_fft, hop, window=win, length=voc.shape[1]).numpy()

    def cov(X):  # [2, F, T] -> smoothed [2, 2, F, T]
        c = np.einsum("ift,jft->ijft", X, X.conj())
        sm = lambda a: uniform_filter(a, size=(1, 1, size, size))
        return sm(c.real) + 1j * sm(c.imag)

    V = spec(voc)
    parts = {k: spec(v) for k, v in ref.items()}
    mags = {k: np.abs(P) for k, P in parts.items()}
    mag_tot = sum(mags.values()) + 1e-9
    covs = {k: cov(P) for k, P in parts.items()}
    tot = sum(covs.values()) + 1e-9 * np.eye(2)[:, :, None, None]
    a, b, c, d = tot[0, 0], tot[0, 1], tot[1, 0], tot[1, 1]
    inv = np.array([[d, -b], [-c, a]]) / (a * d - b * c)
    irm, mwf = {}, {}
    for k in parts:
        if np.any(ref[k]):
            irm[k] = sdr(ref[k], wave(V * mags[k] / mag_tot))
            mwf[k] = sdr(ref[k], wave(np.einsum("ijft,jkft,kft->ift", covs[k], inv, V)))
    return irm, mwf


def evaluate_split(net, spec, dirs, overlap, oracle=False, per_clip=False):
    """Vocal split on make_vocalsplit.py clips. `lead` is what the service publishes: the whole
    vocal minus the harmony and reverb estimates (so the parts add up to it exactly);
    `lead(net)` is the network's own lead output. Floors: the whole vocal as the lead, silence
    as harmony and reverb (0 dB). Harmony SDR is over the clips that have a harmony; on the
    others, `harmony_leak_db` is the harmony estimate's energy relative to the whole vocal."""
    rows, base, leak, orc, tproc, taudio = [], [], [], [], 0.0, 0.0
    meta = {}
    if dirs:
        with open(os.path.join(os.path.dirname(dirs[0]), "meta.jsonl")) as f:
            meta = {m["id"]: m for m in map(json.loads, f)}
    for d in dirs:
        voc = rd(os.path.join(d, "vocals.wav"))
        ref = {s: rd(os.path.join(d, s + ".wav")) for s in SPLIT_PARTS}
        if oracle:
            orc.append(oracles(voc, ref))
        t = time.time()
        est = separate(net, spec, voc, 3, overlap=overlap).numpy()
        tproc += time.time() - t
        taudio += voc.shape[1] / 44100
        e = {"harmony": est[1], "reverb": est[2], "lead(net)": est[0]}
        e["lead"] = voc - est[1] - est[2]
        row = {"lead": sdr(ref["lead"], e["lead"]), "lead(net)": sdr(ref["lead"], e["lead(net)"])}
        b = {"lead": sdr(ref["lead"], voc)}
        for s in ("harmony", "reverb"):
            if np.sum(ref[s].astype(np.float64) ** 2) > 0:
                row[s] = sdr(ref[s], e[s])
                b[s] = 0.0
            elif s == "harmony":
                leak.append(10 * np.log10(np.sum(e[s].astype(np.float64) ** 2) / np.sum(voc.astype(np.float64) ** 2) + 1e-12))
        # how wet the clip is: the reverb's level against the dry voices' (lead + harmony), in dB
        dry = ref["lead"] + ref["harmony"]
        row["wet_db"] = round(10 * np.log10((np.sum(ref["reverb"].astype(np.float64) ** 2) + 1e-12) /
                                            (np.sum(dry.astype(np.float64) ** 2) + 1e-12)), 1)
        row["clip"] = os.path.basename(d)
        row["echo"] = "echo" in meta.get(row["clip"], {})
        rows.append(row)
        base.append(b)

    def med(rs, k):
        v = [r[k] for r in rs if k in r]
        return round(float(np.median(v)), 2)

    keys = ["lead", "lead(net)", "harmony", "reverb"]
    extra = dict(oracle_irm={k: med([o[0] for o in orc], k) for k in SPLIT_PARTS},
                 oracle_mwf={k: med([o[1] for o in orc], k) for k in SPLIT_PARTS}) if oracle else {}
    # the reverb's SDR by how wet the clips are: the wetter half against the drier half
    wet = sorted((r for r in rows if "reverb" in r), key=lambda r: r["wet_db"])
    if len(wet) >= 2:
        half = lambda rs: dict(wet_db=[rs[0]["wet_db"], rs[-1]["wet_db"]], reverb=med(rs, "reverb"))
        extra["reverb_by_wetness"] = dict(drier=half(wet[: len(wet) // 2]), wetter=half(wet[len(wet) // 2:]))
    # the reverb's SDR on the clips with an echo (make_vocalsplit's feedback delay) and on those without
    by_echo = {n: [r for r in rows if "reverb" in r and r["echo"] == e] for n, e in (("echo", True), ("none", False))}
    if all(by_echo.values()):
        extra["reverb_by_echo"] = {n: dict(clips=len(rs), reverb=med(rs, "reverb")) for n, rs in by_echo.items()}
    return dict(median={k: med(rows, k) for k in keys}, ci95={k: median_ci95([r[k] for r in rows if k in r]) for k in keys},
                floor={k: med(base, k) for k in SPLIT_PARTS}, **extra,
                clips=len(rows), clips_with={s: sum(1 for r in rows if s in r) for s in ("harmony", "reverb")},
                harmony_leak_db=round(float(np.median(leak)), 1) if leak else None,
                realtime_torch=round(taudio / max(tproc, 1e-9), 1), overlap=overlap,
                **({"per_clip": rows} if per_clip else {}))


def evaluate(net, cfg, valid, limit=None, name="stems", overlap=0.5, oracle=False, per_clip=False):
    spec = Spec(cfg["n_fft"], cfg["hop"], cfg["dim_f"], cfg["dim_t"])
    net.eval()
    dirs = sorted(glob.glob(os.path.join(valid, "[0-9]*")))
    if limit:
        dirs = dirs[:limit]
    if name == "vocalsplit":
        return evaluate_split(net, spec, dirs, overlap, oracle, per_clip)
    rows, base, tproc, taudio = [], [], 0.0, 0.0
    for d in dirs:
        mix = rd(os.path.join(d, "mixture.wav"))
        ref = {s: rd(os.path.join(d, s + ".wav")) for s in STEMS}
        ref["backing"] = ref["drums"] + ref["bass"] + ref["other"]
        t = time.time()
        if name == "vocals":
            est = separate(lambda X: net(X)[:, 0], spec, mix, 1, overlap=overlap).numpy()
            e = {"vocals": est[0]}
        else:
            est = separate(net, spec, mix, 4, overlap=overlap).numpy()
            e = {s: est[i] for i, s in enumerate(STEMS)}
        tproc += time.time() - t
        taudio += mix.shape[1] / 44100
        e["backing"] = mix - e["vocals"]
        rows.append({k: sdr(ref[k], v) for k, v in e.items()})
        c = np.repeat(mix.mean(0, keepdims=True), 2, 0)
        b = {"vocals": sdr(ref["vocals"], c), "backing": sdr(ref["backing"], mix - c)}
        for s in STEMS[1:]:
            b[s + "(mixture)"] = sdr(ref[s], mix)
        base.append(b)
    med = {k: round(float(np.median([r[k] for r in rows])), 2) for k in rows[0]}
    if name != "vocals":
        med["mean4"] = round(float(np.mean([med[s] for s in STEMS])), 2)
    bmed = {k: round(float(np.median([r[k] for r in base])), 2) for k in base[0]}
    return dict(median=med, baseline=bmed, clips=len(rows), realtime_torch=round(taudio / max(tproc, 1e-9), 1),
                overlap=overlap)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--name", choices=["vocals", "stems", "vocalsplit"], required=True)
    ap.add_argument("--valid", default="/tmp/mixdown-data/valid")
    ap.add_argument("--json", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--oracle", action="store_true",
                    help="vocalsplit: also the ideal ratio mask's and the ideal 2x2 Wiener filter's SDR per part")
    ap.add_argument("--per-clip", action="store_true",
                    help="vocalsplit: also each clip's SDRs (`per_clip`), for compare.py")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    ck = torch.load(a.ckpt)
    cfg = ck["cfg"]
    net = net_from_cfg(cfg)
    net.load_state_dict(ck["model"])
    res = evaluate(net, cfg, a.valid, name=a.name, oracle=a.oracle, per_clip=a.per_clip)
    res.update(step=ck.get("step"), train_minutes=ck.get("minutes"), params=ck.get("params"))
    print(json.dumps(res, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
