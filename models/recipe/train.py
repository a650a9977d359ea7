#!/usr/bin/python3
"""Train a Mixdown MDX-signature mask network on a dataset made by
make_dataset.py, with random cross-clip remixing augmentation.

  --mode stems   4 stems (vocals, drums, bass, other), softmax masks
  --mode vocals  vocals / backing (fine-tuned from a stems checkpoint via
                 --init; the vocals net keeps the 4-way softmax internally
                 and outputs only the vocals spectrogram)
  --mode vocalsplit  the whole vocal -> lead / harmony / reverb, softmax masks,
                 on a dataset made by make_vocalsplit.py

Training is time-budgeted (--minutes) with a cosine LR schedule over the
budget; checkpoints + ONNX exports are written every --export-every minutes.
"""
import argparse
import copy
import glob
import json
import math
import os
import sys
import time

import numpy as np
import torch
from scipy.io import wavfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mdxlite import MaskNet, Spec, count_params, freeze_bn, load_onnx, load_widened  # noqa: E402
import export_onnx  # noqa: E402
import evaluate  # noqa: E402

STEMS = ["vocals", "drums", "bass", "other"]
SPLIT_PARTS = ["lead", "harmony", "reverb"]


def load_set(root, names=STEMS):
    clips = []
    for d in sorted(glob.glob(os.path.join(root, "[0-9]*"))):
        st = []
        for s in names:
            _, x = wavfile.read(os.path.join(d, s + ".wav"))
            st.append(x.T.copy())  # [2, N] int16
        n = min(a.shape[1] for a in st)
        clips.append(np.stack([a[:, :n] for a in st]))  # [4, 2, N]
    return clips


class Sampler:
    def __init__(self, clips, seg, seed):
        self.clips, self.seg = clips, seg
        self.rng = np.random.default_rng(seed)

    def piece(self, ci, stem, off=None):
        c = self.clips[ci]
        n = c.shape[2]
        if off is None:
            off = self.rng.integers(0, max(1, n - self.seg))
        x = c[stem, :, off: off + self.seg].astype(np.float32) / 32768.0
        if x.shape[1] < self.seg:
            x = np.pad(x, ((0, 0), (0, self.seg - x.shape[1])))
        return x

    def example(self):
        r = self.rng
        nc = len(self.clips)
        stems = np.zeros((4, 2, self.seg), np.float32)
        if r.random() < 0.3:
            ci = r.integers(nc)
            off = r.integers(0, max(1, self.clips[ci].shape[2] - self.seg))
            for s in range(4):
                stems[s] = self.piece(ci, s, off)
        else:
            for s in range(4):
                stems[s] = self.piece(r.integers(nc), s)
        for s in range(4):
            e = np.sqrt(np.mean(stems[s] ** 2)) + 1e-5
            lo, hi = (-5, 5) if s == 0 else (-9, 4)
            stems[s] *= (0.08 / e) * 10 ** (r.uniform(lo, hi) / 20) if e > 3e-4 else 1.0
            if r.random() < 0.5:
                stems[s] = stems[s][::-1]
            if s > 0 and r.random() < 0.04:
                stems[s] = 0
        if r.random() < 0.04:
            stems[0] = 0
        if r.random() < 0.25:  # re-pan vocals
            p = r.uniform(-0.7, 0.7)
            a = (p + 1) * math.pi / 4
            stems[0] = stems[0] * (np.array([math.cos(a), math.sin(a)], np.float32)[:, None] * math.sqrt(2))
        if r.random() < 0.1:
            stems[:] = stems.mean(1, keepdims=True)
        stems *= 10 ** (r.uniform(-12, 6) / 20)
        return stems

    def batch(self, b):
        return torch.from_numpy(np.stack([self.example() for _ in range(b)]))  # [B,4,2,N]


class SplitSampler(Sampler):
    """lead / harmony / reverb examples. Mostly one clip's parts together: a harmony follows its
    lead's phrases and the reverb is the wet part of exactly these voices, which cross-clip
    remixing would break. Sometimes the harmony comes from another clip (a different melody),
    and part levels move a little (a wetter or drier mix, a louder or quieter harmony). Never
    time-reversed: a reverb tail must follow its sound."""

    def example(self):
        r = self.rng
        nc = len(self.clips)
        ci = r.integers(nc)
        off = r.integers(0, max(1, self.clips[ci].shape[2] - self.seg))
        parts = np.stack([self.piece(ci, s, off) for s in range(3)])
        if r.random() < 0.15:
            parts[1] = self.piece(r.integers(nc), 1)
        for s, (lo, hi) in enumerate([(-2, 2), (-5, 4), (-5, 5)]):
            parts[s] *= 10 ** (r.uniform(lo, hi) / 20)
        if r.random() < 0.05:
            parts[1] = 0
        if r.random() < 0.5:
            parts = parts[:, ::-1].copy()
        e = np.sqrt(np.mean(parts.sum(0) ** 2)) + 1e-5
        parts *= (0.1 / e) * 10 ** (r.uniform(-12, 6) / 20) if e > 3e-4 else 1.0
        return parts.astype(np.float32)


def sdr_loss(est, ref, eps, present=None):
    """est/ref [B, K, 4, F, T]; eps [B,1]; returns mean negative SDR (dB) per stem. present [B, K]
    (optional): the examples that count for each stem (a stem with none counts 0)."""
    err = ((est - ref) ** 2).sum(dim=(2, 3, 4))
    tgt = (ref ** 2).sum(dim=(2, 3, 4))
    l = 10 * torch.log10(err + eps) - 10 * torch.log10(tgt + eps)
    if present is None:
        return l.mean(0)
    w = present.float()
    return (l * w).sum(0) / w.sum(0).clamp_min(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["stems", "vocals", "vocalsplit"], required=True)
    ap.add_argument("--data", default="/tmp/mixdown-data/train", help="training set directory (or several, comma-separated)")
    ap.add_argument("--valid", default="/tmp/mixdown-data/valid")
    ap.add_argument("--workdir", default="/tmp/mixdown-train")
    ap.add_argument("--models-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--init", default=None)
    ap.add_argument("--init-onnx", default=None,
                    help="start from an ONNX file export_onnx.py wrote (a committed model; needs --refine as it was "
                         "trained); its BatchNorms were fused, so they stay frozen (eval mode) while training")
    ap.add_argument("--minutes", type=float, default=35)
    ap.add_argument("--stop-at", type=float, default=None,
                    help="stop after this many minutes, the learning-rate cycle still laid out over --minutes")
    ap.add_argument("--export-every", type=float, default=10)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch", type=int, default=6)
    ap.add_argument("--train-frames", type=int, default=128)
    ap.add_argument("--n-fft", type=int, default=4096)
    ap.add_argument("--dim-f", type=int, default=1024)
    ap.add_argument("--dim-t", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--refine", action="store_true", help="add the full-resolution refinement block")
    ap.add_argument("--refine-ch", type=int, default=12, help="channels of the refinement block")
    ap.add_argument("--refine-k", default="5x3", help="kernel (frequency x time) of the refinement block")
    ap.add_argument("--freeze-bn", action="store_true",
                    help="BatchNorms stay in eval mode (for --init from a checkpoint trained from --init-onnx)")
    ap.add_argument("--ema", type=float, default=0.0,
                    help="keep an exponential moving average of the weights with this decay (e.g. 0.998) and save/export it")
    ap.add_argument("--split-weights", default="1.5,1,1",
                    help="vocalsplit: loss weights of lead, harmony, reverb (each a negative SDR)")
    ap.add_argument("--cross", action="store_true",
                    help="add the cross-channel terms (a 2x2 complex filter per bin; zero-initialised, so --init from a "
                         "network without them starts from its function)")
    ap.add_argument("--ipd", action="store_true",
                    help="add the inter-channel phase (cos, sin) to the input features (their weights zero-initialised "
                         "when --init loads a network without them)")
    ap.add_argument("--echo", action="store_true",
                    help="add the echo features (per bin, the share an echo of the frame one echo delay earlier "
                         "would have): their input weights start at zero when --init loads a network without "
                         "them, but the 1x1 layer that also takes them to the mask logits starts at the reverb's "
                         "logit + 2 x the proposal, so such a start is not the loaded function")
    ap.add_argument("--tch", type=int, default=256,
                    help="width of the temporal stack; wider than --init's widens it, keeping its function")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    os.makedirs(a.workdir, exist_ok=True)
    hop = 1024
    spec = Spec(a.n_fft, hop, a.dim_f, a.train_frames)
    seg = hop * (a.train_frames - 1)
    print("loading", a.data, flush=True)
    split = a.mode == "vocalsplit"
    clips = [c for d in a.data.split(",") for c in load_set(d, SPLIT_PARTS if split else STEMS)]
    print("clips", len(clips), flush=True)
    sampler = (SplitSampler if split else Sampler)(clips, seg, a.seed + 17)
    refine_k = tuple(int(v) for v in a.refine_k.split("x"))
    n_stems = 3 if split else 4
    split_w = torch.tensor([float(v) for v in a.split_weights.split(",")])
    net = MaskNet(a.dim_f, n_stems, tch=a.tch, refine=a.refine, refine_ch=a.refine_ch, refine_k=refine_k,
                  cross=a.cross, ipd=a.ipd, echo=a.echo)
    cfg = dict(n_fft=a.n_fft, hop=hop, dim_f=a.dim_f, dim_t=a.dim_t, n_stems=n_stems, tch=a.tch, refine=a.refine,
               refine_ch=a.refine_ch, refine_k=list(refine_k), cross=a.cross, ipd=a.ipd, echo=a.echo)
    if a.init:
        ck = torch.load(a.init)
        missing = load_widened(net, ck["model"])
        print("init from", a.init, "new (not in the checkpoint):", missing, flush=True)
    if a.init_onnx:
        skipped = load_onnx(net, a.init_onnx)
        print("init from", a.init_onnx, "(BatchNorms frozen); output layers left at init:", skipped, flush=True)

    # channels-last memory for the 2-D convolutions: the same arithmetic, but oneDNN's kernels run
    # them 1.3-3x faster on CPU than in NCHW (the full-resolution refinement block most of all)
    net = net.to(memory_format=torch.channels_last)

    def train_mode():
        net.train()
        if a.init_onnx or a.freeze_bn:
            freeze_bn(net)

    nparam = count_params(net)
    print("params", nparam, flush=True)
    opt = torch.optim.AdamW(net.parameters(), lr=a.lr, weight_decay=1e-5)
    budget = a.minutes * 60
    t0 = time.time()
    last_export = t0
    step = 0
    hist = []
    nexp = 0

    ema = copy.deepcopy(net).eval() if a.ema > 0 else None

    @torch.no_grad()
    def update_ema():
        for pe, p in zip(ema.parameters(), net.parameters()):
            pe.mul_(a.ema).add_(p, alpha=1 - a.ema)
        for be, b in zip(ema.buffers(), net.buffers()):
            be.copy_(b)

    def optimise(loss):
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
        opt.step()
        if ema is not None:
            update_ema()

    def save_and_export(final=False):
        nonlocal nexp
        nexp += 1
        out = copy.deepcopy(ema if ema is not None else net).to(memory_format=torch.contiguous_format)
        ck = dict(model=out.state_dict(), cfg=cfg, mode=a.mode, step=step, ema=a.ema,
                  minutes=(time.time() - t0) / 60, schedule_minutes=a.minutes, params=nparam)
        path = os.path.join(a.workdir, "%s.pt" % a.mode)
        torch.save(ck, path + ".tmp")
        os.replace(path + ".tmp", path)
        out.eval()
        names = {"stems": ["stems", "vocals"], "vocals": ["vocals"], "vocalsplit": ["vocalsplit"]}[a.mode]
        for nm in names:
            export_onnx.export(out, cfg, nm, a.models_dir)
        # quick held-out check on a subset (full evaluation runs separately)
        if os.path.isdir(a.valid) and not final:  # final full evaluation: evaluate.py
            res = evaluate.evaluate(out, cfg, a.valid, limit=10, name=a.mode)
            print("VALID(10 clips) step %d min %.1f %s" % (step, (time.time() - t0) / 60, json.dumps(res["median"])), flush=True)
            with open(os.path.join(a.workdir, "%s_valid.json" % a.mode), "w") as f:
                json.dump(dict(res, step=step, minutes=(time.time() - t0) / 60), f, indent=1)
        train_mode()

    train_mode()
    while True:
        el = time.time() - t0
        if el > budget or (a.stop_at is not None and el > a.stop_at * 60):
            break
        frac = el / budget
        lr = a.lr * (min(1.0, (step + 1) / 50)) * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        st = sampler.batch(a.batch)  # [B,4,2,N]
        mix = st.sum(1)
        with torch.no_grad():
            X = spec.stft(mix).contiguous(memory_format=torch.channels_last)  # [B,4,F,T]
            Y = spec.stft(st)  # [B,4,4,F,T]
        est = net(X)  # [B,S,4,F,T]
        eps = 1e-3 * (X ** 2).sum(dim=(1, 2, 3))[:, None] + 1e-8
        if split:
            # A part that is silent in an example (no harmony) gives no SDR to learn from: its loss
            # there is only how loud the estimate is, +20 dB and more for a faint leak, which drove
            # the harmony output to silence everywhere. The lead's loss already punishes a harmony
            # or reverb estimate that takes the lead's energy, so silent parts are left out.
            present = (Y ** 2).sum(dim=(2, 3, 4)) > eps
            l_st = sdr_loss(est, Y, eps, present)
            loss = (l_st * split_w).sum() / split_w.sum()
            optimise(loss)
            step += 1
            hist.append(-l_st.detach().numpy())
            if step % 25 == 0:
                v = np.mean(hist[-25:], 0)
                print("step %d min %.1f lr %.2e trainSDR lead %.2f harmony %.2f reverb %.2f" %
                      (step, (time.time() - t0) / 60, lr, v[0], v[1], v[2]), flush=True)
            if time.time() - last_export > a.export_every * 60:
                save_and_export()
                last_export = time.time()
            continue
        l_st = sdr_loss(est, Y, eps)  # per stem
        back_e = est[:, 1:].sum(1, keepdim=True)
        back_r = Y[:, 1:].sum(1, keepdim=True)
        l_bk = sdr_loss(back_e, back_r, eps)[0]
        if a.mode == "stems":
            loss = l_st.mean() + 0.5 * l_st[0] + 0.25 * l_bk
        else:
            loss = l_st[0] + l_bk + 0.2 * l_st[1:].mean()
        optimise(loss)
        step += 1
        hist.append([-l_st.detach().numpy(), -float(l_bk)])
        if step % 25 == 0:
            v = np.mean([h[0] for h in hist[-25:]], 0)
            b = np.mean([h[1] for h in hist[-25:]])
            print("step %d min %.1f lr %.2e trainSDR v %.2f d %.2f b %.2f o %.2f back %.2f" %
                  (step, (time.time() - t0) / 60, lr, v[0], v[1], v[2], v[3], b), flush=True)
        if time.time() - last_export > a.export_every * 60:
            save_and_export()
            last_export = time.time()
    save_and_export(final=True)
    print("DONE %s steps %d minutes %.1f" % (a.mode, step, (time.time() - t0) / 60), flush=True)


if __name__ == "__main__":
    main()
