#!/usr/bin/python3
"""Paired comparison of two vocal-split files on the same held-out clips.

  python3 models/recipe/compare.py A.json B.json

A.json and B.json are `evaluate.py --name vocalsplit --per-clip --json ...` outputs on one set. Per
part: both medians, the median over the clips of B's SDR minus A's, that median's 95 % bootstrap
interval (2,000 resamples of the clips, fixed seed) and on how many clips B is better. Comparing
per clip takes out what the clips themselves contribute (some are hard for every file), so it
tells two files apart more finely than their medians do.
"""
import argparse
import json

import numpy as np


def median_ci95(values, digits=2, n=2000):
    """The median's 95 % bootstrap interval over `values` (n resamples, fixed seed), rounded."""
    v = np.asarray(values, dtype=np.float64)
    m = np.median(v[np.random.default_rng(0).integers(0, len(v), (n, len(v)))], 1)
    return [round(float(np.percentile(m, 2.5)), digits), round(float(np.percentile(m, 97.5)), digits)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    ra, rb = ({r["clip"]: r for r in json.load(open(p))["per_clip"]} for p in (args.a, args.b))
    if set(ra) != set(rb):
        raise SystemExit("the two evaluations are not on the same clips")
    out = {}
    for k in ("lead", "lead(net)", "harmony", "reverb"):
        clips = [c for c in sorted(ra) if k in ra[c] and k in rb[c]]
        d = np.array([rb[c][k] - ra[c][k] for c in clips])
        out[k] = dict(clips=len(clips), a=round(float(np.median([ra[c][k] for c in clips])), 2),
                      b=round(float(np.median([rb[c][k] for c in clips])), 2), diff=round(float(np.median(d)), 3),
                      ci95=median_ci95(d, digits=3),
                      b_better=int(np.sum(d > 0)))
        o = out[k]
        print("%-10s %3d clips  A %6.2f  B %6.2f dB  B - A per clip: median %+.3f dB (95 %% %+.3f to %+.3f), B better on %d"
              % (k, o["clips"], o["a"], o["b"], o["diff"], o["ci95"][0], o["ci95"][1], o["b_better"]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
