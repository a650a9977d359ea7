#!/usr/bin/python3
"""Synthesise a vocal-split dataset: a whole vocal and its lead / harmony / reverb parts.

The voices come from make_dataset.py's synthesis (espeak-ng, flite and, in train, Festival's
recorded voices, with sung-like pitch contours; the same train / valid voice split), so every
part is known exactly:

  lead     the dry lead vocal, sometimes doubled (the same phrase again, 8-35 ms late, a few
           cents off, panned apart: a double is part of the lead, as a listener hears it)
  harmony  0-2 other dry voices (none in ~25 % of clips): the lead shifted by a third, fourth,
           fifth, sixth or octave, up or down, sometimes on only some of its phrases, or a
           different phrase sung by another voice; 4-12 dB quieter than the lead, panned
  reverb   everything wet: a feedback echo of the lead (ping-pong or not, darker each repeat;
           ~45 % of clips) and a stereo room (decaying-noise impulse responses, RT60 0.2-2.5 s;
           ~90 % of clips) fed by all voices and the echo; the dry parts stay in lead / harmony
  vocals   lead + harmony + reverb, exactly (the sum of the quantised parts)

Usage:
  python3 models/recipe/make_vocalsplit.py --split train|valid --count N --seconds S --out DIR
      [--seed-offset K] [--jobs 2]

Writes DIR/<0000..>/{vocals,lead,harmony,reverb}.wav (44.1 kHz stereo 16-bit) and
DIR/meta.jsonl. Seeds: train 2e6+i, valid 8e6+i (disjoint from each other and from
make_dataset.py's).
"""
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
from scipy.io import wavfile
from scipy.signal import fftconvolve, lfilter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_dataset import SR, pan, read_wav_float, room_irs, run_cli, synth_phrase  # noqa: E402

PARTS = ["lead", "harmony", "reverb"]
# cents: minor/major third, fourth, fifth, minor/major sixth, octave; up and down
INTERVALS = [300, 400, 500, 700, 800, 900, 1200, -300, -400, -500, -700, -800, -900, -1200]


def phrase(rng, split, tmp):
    # synth_phrase writes fixed file names: a failed synthesis must not reuse the last one
    for f in ("v_raw.wav", "v_out.wav"):
        p = os.path.join(tmp, f)
        if os.path.exists(p):
            os.remove(p)
    x, d = synth_phrase(rng, split, tmp)
    if x is None or len(x) < SR // 10:
        return None, d
    return x / (np.sqrt(np.mean(x**2)) + 1e-6) * 0.1, d


def sing_line(rng, split, nsamp, tmp, slots=None):
    """A line of phrases (mono), either at its own positions or inside the given slots."""
    out = np.zeros(nsamp, np.float32)
    segs, descs = [], []
    if slots is None:
        pos, guard = int(rng.uniform(0, 1.0) * SR), 0
        while pos < nsamp and guard < 30:
            guard += 1
            x, d = phrase(rng, split, tmp)
            if x is None:
                continue
            x *= rng.uniform(0.7, 1.3)
            n = min(len(x), nsamp - pos)
            out[pos: pos + n] += x[:n]
            segs.append((pos, pos + n))
            descs.append(d)
            pos += n + int(rng.uniform(0.0, 0.8) * SR)
    else:
        for a, b in slots:
            x, d = phrase(rng, split, tmp)
            if x is None:
                continue
            n = min(len(x), b - a, nsamp - a)
            out[a: a + n] += x[:n] * rng.uniform(0.7, 1.3)
            segs.append((a, a + n))
            descs.append(d)
    return out, segs, descs


def sox_pitch(x, cents, tmp):
    src, dst = os.path.join(tmp, "p_in.wav"), os.path.join(tmp, "p_out.wav")
    wavfile.write(src, SR, x.astype(np.float32))
    r = subprocess.run(["sox", "-R", src, "-b", "32", "-e", "floating-point", dst, "pitch", "%.1f" % cents, "rate", "-q", str(SR)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    if r.returncode != 0:
        return None
    _, y = read_wav_float(dst)
    if y.ndim > 1:
        y = y.mean(1)
    y = y[: len(x)]
    return np.pad(y, (0, len(x) - len(y))).astype(np.float32)


def delay(x, n):
    return np.concatenate([np.zeros(n, np.float32), x[: len(x) - n]]) if n > 0 else x


def rms(x):
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))) + 1e-9)


def gate_phrases(rng, x, segs, keep):
    """Keeps each phrase with probability `keep` (harmonies that join on some lines only)."""
    g = np.zeros(len(x), np.float32)
    kept = 0
    for a, b in segs:
        if rng.random() < keep:
            g[a: b] = 1.0
            kept += 1
    if kept == 0 and segs:
        a, b = segs[rng.randrange(len(segs))]
        g[a: b] = 1.0
    # 20 ms ramps so a gated phrase starts and stops without a click
    k = int(0.02 * SR)
    g = np.convolve(g, np.ones(k, np.float32) / k, mode="same")
    return x * g


def echo(rng, x):
    """Feedback delay of a mono signal -> stereo wet echo (no dry part)."""
    d = int(rng.uniform(0.12, 0.6) * SR)
    fb = rng.uniform(0.2, 0.55)
    pingpong = rng.random() < 0.5
    # one-pole lowpass per repeat: each echo darker than the last
    a = np.exp(-2 * np.pi * rng.uniform(2000, 7000) / SR)
    out = np.zeros((len(x), 2), np.float32)
    tap, g, k = x.astype(np.float32), 1.0, 1
    while g > 0.01 and k * d < len(x):
        tap = lfilter([1 - a], [1, -a], tap).astype(np.float32)
        y = delay(tap, k * d) * g
        if pingpong:
            out[:, (k - 1) % 2] += y
        else:
            out += y[:, None]
        g *= fb
        k += 1
    return out, dict(delay_s=round(d / SR, 3), feedback=round(fb, 2), pingpong=pingpong)


def room(rng, x):
    """Mono -> the wet stereo signal of a synthetic room (decaying noise impulse responses)."""
    rt = rng.uniform(0.2, 2.5)
    nr = np.random.default_rng(rng.randint(0, 2**31))
    pre = int(rng.uniform(0.0, 0.04) * SR)
    irs = [np.concatenate([np.zeros(pre), ir]) for ir in room_irs(nr, rt, int(SR * min(rt, 2.0)))]
    y = np.stack([fftconvolve(x, ir)[: len(x)] for ir in irs], 1)
    return y.astype(np.float32), dict(rt60=round(rt, 2), predelay_s=round(pre / SR, 3))


def make_clip(args):
    split, idx, seconds, out, seed = args
    rng = random.Random(seed)
    nsamp = int(seconds * SR)
    d = os.path.join(out, "%04d" % idx)
    os.makedirs(d, exist_ok=True)
    meta = dict(id="%04d" % idx, split=split, seed=seed, seconds=seconds)
    with tempfile.TemporaryDirectory(prefix="mixdown_vs_") as tmp:
        lead_m, segs, descs = sing_line(rng, split, nsamp, tmp)
        meta["lead_voices"] = sorted(set(descs))
        lead = pan(np.stack([lead_m, lead_m], 1), rng.uniform(-0.15, 0.15) if rng.random() < 0.3 else 0.0)
        if rng.random() < 0.3:
            dbl = sox_pitch(delay(lead_m, int(rng.uniform(0.008, 0.035) * SR)), rng.choice([-1, 1]) * rng.uniform(5, 20), tmp)
            if dbl is not None:
                s = rng.uniform(0.3, 0.7)
                g = rng.uniform(0.5, 0.9)
                lead = pan(np.stack([lead_m, lead_m], 1), -s) + pan(np.stack([dbl, dbl], 1), s) * g
                meta["double"] = dict(spread=round(s, 2), gain=round(g, 2))
        nh = rng.choices([0, 1, 2], weights=[0.25, 0.45, 0.30])[0]
        harmony = np.zeros((nsamp, 2), np.float32)
        hmono = np.zeros(nsamp, np.float32)
        meta["harmonies"] = []
        lead_rms = rms(lead_m[lead_m != 0]) if np.any(lead_m) else 0.1
        for _ in range(nh):
            if rng.random() < 0.75:
                cents = rng.choice(INTERVALS)
                h = sox_pitch(lead_m, cents + rng.uniform(-8, 8), tmp)
                if h is None:
                    continue
                h = delay(h, int(rng.uniform(0, 0.04) * SR))
                desc = dict(kind="interval", cents=cents)
                if rng.random() < 0.4:
                    h = gate_phrases(rng, h, segs, 0.6)
                    desc["some_phrases"] = True
            else:
                h, _, hd = sing_line(rng, split, nsamp, tmp, slots=segs)
                desc = dict(kind="melody", voices=sorted(set(hd)))
            if not np.any(h):
                continue
            gdb = rng.uniform(-12, -4)
            h = h / rms(h[h != 0]) * lead_rms * 10 ** (gdb / 20)
            p = rng.choice([-1, 1]) * rng.uniform(0.3, 0.9)
            harmony += pan(np.stack([h, h], 1), p)
            hmono += h
            desc.update(gain_db=round(gdb, 1), pan=round(p, 2))
            meta["harmonies"].append(desc)
    reverb = np.zeros((nsamp, 2), np.float32)
    dry = lead + harmony
    send = lead_m + hmono * rng.uniform(0.7, 1.5)
    if rng.random() < 0.45:
        e, meta["echo"] = echo(rng, lead_m)
        e *= rms(lead_m) / rms(e) * 10 ** (rng.uniform(-16, -6) / 20)
        reverb += e
        send = send + e.mean(1)
    if rng.random() < 0.9:
        w, meta["room"] = room(rng, send)
        w *= rms(dry) / rms(w) * 10 ** (rng.uniform(-16, -3) / 20)
        reverb += w
    parts = {"lead": lead, "harmony": harmony, "reverb": reverb}
    meta["mono"] = rng.random() < 0.1
    if meta["mono"]:
        parts = {k: np.repeat(v.mean(1, keepdims=True), 2, 1) for k, v in parts.items()}
    peak = float(np.max(np.abs(sum(parts.values())))) + 1e-9
    scale = rng.uniform(0.3, 0.95) / peak
    # quantise the parts first and define the whole vocal as their exact sum
    q = {k: np.clip(np.round(v * scale * 32767), -32768, 32767).astype(np.int32) for k, v in parts.items()}
    voc = np.clip(q["lead"] + q["harmony"] + q["reverb"], -32768, 32767)
    for k, v in q.items():
        wavfile.write(os.path.join(d, k + ".wav"), SR, v.astype(np.int16))
    wavfile.write(os.path.join(d, "vocals.wav"), SR, voc.astype(np.int16))
    return meta


def main():
    run_cli(__doc__, make_clip, ["train", "valid"], {"train": 2_000_000, "valid": 8_000_000})


if __name__ == "__main__":
    main()
