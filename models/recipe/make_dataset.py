#!/usr/bin/python3
"""Synthesise a music-separation dataset from Debian packages only.

Vocals: espeak-ng (many languages x voice variants) and flite, with random
speed / pitch / pitch range, sung-like pitch contours (sox `bend` + `pitch`),
stereo reverb and panning.
Drums / bass / other: Standard MIDI Files generated here and rendered with
fluidsynth + FluidR3_GM.sf2 (drums on channel 10, bass line, chords and
melodies in random keys with random General MIDI programs and pans).

Usage:
  python3 models/recipe/make_dataset.py --split train|valid --count N \
      --seconds S --out DIR [--seed-offset K] [--jobs 2]

Writes DIR/<0000..>/{mixture,vocals,drums,bass,other}.wav
(44100 Hz, stereo, 16-bit PCM; mixture == vocals+drums+bass+other up to
quantisation) and DIR/meta.jsonl.

Training and validation use disjoint voices (see VALID_LANGS/VALID_VARIANTS/
VALID_FLITE) and disjoint seed ranges (train seeds 1e6+i, valid 9e6+i).
"""
import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
from multiprocessing import Pool

import numpy as np
from scipy.io import wavfile
from scipy.signal import fftconvolve, resample_poly

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import material  # noqa: E402

SR = 44100

# ---------------------------------------------------------------- voices
ESPEAK_LANGS = (
    "af am an ar as az ba be bg bn bs ca cmn cs cv cy da de el en-029 en-gb "
    "en-gb-scotland en-gb-x-gbclan en-gb-x-gbcwmd en-gb-x-rp en-us en-us-nyc eo es "
    "es-419 et eu fa fi fr-be fr-fr ga gd gu haw he hi hr hu hy ia id is it ja "
    "ka kk kn ko la lb lt lv mi mk ml mr ms mt my nb ne nl om or pa pl pt pt-br "
    "ro ru sd si sk sl sq sr sv sw ta te th tr tt uk ur uz vi yue"
).split()
ESPEAK_VARIANTS = (
    "Alex Alicia Andrea Andy Annie AnxiousAndy Denis Diogo Gene Gene2 Henrique "
    "Hugo Jacky Lee Marco Mario Michael Mike Nguyen RicishayMax Storm Tweaky adam "
    "anika announcer antonio aunty belinda benjamin boris caleb david ed edward "
    "edward2 f1 f2 f3 f4 f5 grandma grandpa gustave iven iven2 iven3 iven4 john "
    "kaukovalta klatt klatt2 klatt3 klatt4 klatt5 klatt6 linda m1 m2 m3 m4 m5 m6 "
    "m7 m8 marcelo max michel miguel norbert pablo paul pedro quincy rob robert "
    "sandro shelby steph steph2 steph3 travis victor zac"
).split()
# held-out voices: validation = held-out language AND held-out variant;
# training never uses a held-out language nor a held-out variant.
VALID_LANGS = "de fr-fr it pt pl sv hi ja ru en-us".split()
VALID_VARIANTS = "f2 m3 klatt2 Annie steph robert belinda max".split()
FLITE_VOICES_TRAIN = ["kal", "kal16", "rms", "awb_time"]
FLITE_VOICES_VALID = ["slt", "awb"]

# What each split is made of (see material.py for the recorded material and what it holds out).
# festival: the share of phrases sung by Festival voices (else espeak-ng / flite); kits: the
# share of clips whose drums are a Hydrogen kit (else the soundfont's drums); formants: the share of
# Festival phrases whose formants are moved (a new speaker); soundfonts: the
# fonts a clip's instruments are rendered with (one per clip). `valid` is what the models were
# always measured on (synthetic voices, FluidR3): it draws nothing new from the random stream,
# so its clips stay what they were (up to sox's dither in the last bit, which differs run to run).
# `valid-wide` is train's material in unseen clips. The `ood*` splits use only held-out material:
# `ood` all of it, `ood-voices` held-out voices over valid's instruments, `ood-instruments`
# valid's voices over held-out kits and soundfonts.
WIDE = dict(festival=0.4, festival_voices=material.FESTIVAL_TRAIN, kits=0.5, kit_set="train",
            soundfonts=material.SOUNDFONTS_TRAIN)
SPLITS = {
    "train": dict(WIDE, seed=1_000_000),
    # train's material with 3 in 4 Festival phrases given other formants (material.move_formants)
    "train-formants": dict(WIDE, seed=1_000_000, formants=0.75),
    # the material the models learnt first (espeak-ng / flite voices, FluidR3 and its drums), kept
    # next to `train` so that widening does not cost the old domain
    "train-synthetic": dict(seed=3_000_000, festival=0.0, kits=0.0, soundfonts=[material.FLUID]),
    "valid": dict(seed=9_000_000, festival=0.0, kits=0.0, soundfonts=[material.FLUID]),
    # in domain for the widened models: train's mix of material (its Festival voices, kits and
    # soundfonts) in unseen clips, with valid's held-out espeak-ng / flite voices
    "valid-wide": dict(WIDE, seed=6_000_000),
    # the in-domain twin of `ood` for the widened models: only train's Festival voices, kits and
    # soundfonts, so that set against `ood` it tells what unheard voices and instruments cost
    # from what recorded material costs any model
    "valid-matched": dict(seed=4_000_000, festival=1.0, festival_voices=material.FESTIVAL_TRAIN, kits=1.0,
                          kit_set="train", soundfonts=material.SOUNDFONTS_TRAIN),
    "ood": dict(seed=7_000_000, festival=1.0, festival_voices=material.FESTIVAL_HELDOUT, kits=1.0,
                kit_set="heldout", soundfonts=material.SOUNDFONTS_HELDOUT),
    "ood-voices": dict(seed=7_000_000, festival=1.0, festival_voices=material.FESTIVAL_HELDOUT, kits=0.0,
                       soundfonts=[material.FLUID]),
    "ood-instruments": dict(seed=7_000_000, festival=0.0, kits=1.0, kit_set="heldout",
                            soundfonts=material.SOUNDFONTS_HELDOUT),
}

SYLL_C = "b c d f g h j k l m n p r s t v w y z ch sh th br tr st".split()
SYLL_V = "a e i o u ai ee oo ay oh ah la".split()


def voices_for(split):
    if not split.startswith("train"):
        langs, variants = VALID_LANGS, VALID_VARIANTS
        flite = FLITE_VOICES_VALID
    else:
        langs = [l for l in ESPEAK_LANGS if l not in VALID_LANGS]
        variants = [v for v in ESPEAK_VARIANTS if v not in VALID_VARIANTS]
        flite = FLITE_VOICES_TRAIN
    return langs, variants, flite


def pseudo_text(rng, nwords):
    words = []
    for _ in range(nwords):
        n = rng.randint(1, 3)
        words.append("".join(rng.choice(SYLL_C) + rng.choice(SYLL_V) for _ in range(n)))
    return " ".join(words)


def read_wav_float(path):
    sr, x = wavfile.read(path)
    if x.dtype == np.int16:
        x = x.astype(np.float32) / 32768.0
    elif x.dtype == np.int32:
        x = x.astype(np.float32) / 2147483648.0
    else:
        x = x.astype(np.float32)
    return sr, x


def synth_phrase(rng, split, tmp):
    """One vocal phrase, mono float32 at 44.1 kHz."""
    langs, variants, flite = voices_for(split)
    raw = os.path.join(tmp, "v_raw.wav")
    out = os.path.join(tmp, "v_out.wav")
    text = pseudo_text(rng, rng.randint(2, 8))
    cfg = SPLITS[split]
    if cfg["festival"] > 0 and rng.random() < cfg["festival"]:
        voice = rng.choice(cfg["festival_voices"])
        material.festival_phrase(voice, text, raw)
        desc = "festival:" + voice
        if cfg.get("formants", 0) > 0 and rng.random() < cfg["formants"] and os.path.exists(raw) \
                and os.path.getsize(raw) >= 1000:
            # a new speaker from a recorded one: formants moved by up to 4 semitones, pitch kept
            ratio = 2 ** rng.uniform(-1 / 3, 1 / 3)
            material.move_formants(raw, ratio)
            desc += "@formants%.2f" % ratio
    elif rng.random() < 0.15:
        voice = rng.choice(flite)
        cmd = ["flite", "-voice", voice, "-t", text, "-o", raw]
        desc = "flite:" + voice
    else:
        lang = rng.choice(langs)
        var = rng.choice(variants + [None])
        v = lang if var is None else lang + "+" + var
        speed = rng.randint(90, 220)
        pitch = rng.randint(15, 85)
        prange = rng.choice(["x-low", "x-low", "low", "medium", "high", "x-high"])
        gap = rng.randint(0, 4)
        ssml = '<speak><prosody range="%s">%s</prosody></speak>' % (prange, text)
        cmd = ["espeak-ng", "-m", "-v", v, "-s", str(speed), "-p", str(pitch),
               "-g", str(gap), "-a", "150", "-w", raw, ssml]
        desc = "espeak:%s" % v
    if not desc.startswith("festival:"):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=30, check=False)
    if not os.path.exists(raw) or os.path.getsize(raw) < 1000:
        return None, desc
    # sox: resample, global pitch shift, sung-like bends, tempo change
    eff = ["rate", "-q", str(SR)]
    shift = rng.uniform(-500, 500)
    eff += ["pitch", "%.0f" % shift]
    try:
        dur = float(subprocess.run(["soxi", "-D", raw], capture_output=True,
                                   text=True).stdout.strip() or 0)
    except Exception:
        dur = 0
    if dur > 0.5 and rng.random() < 0.8:
        # piecewise "notes": sequence of bends, each starting after the last
        bends, t = [], 0.0
        while True:
            hold = rng.uniform(0.12, 0.5)
            bd = rng.uniform(0.03, 0.12)
            if t + hold + bd > dur - 0.05:
                break
            bends.append("%.3f,%d,%.3f" % (hold, rng.choice([-700, -500, -400, -300, -200, -100, 100, 200, 300, 400, 500, 700]), bd))
            t += hold + bd
            if len(bends) > 40:
                break
        if bends:
            eff += ["bend"] + bends
    if rng.random() < 0.4:
        eff += ["tempo", "-s", "%.2f" % rng.uniform(0.75, 1.3)]
    r = subprocess.run(["sox", "-R", raw, "-c", "1", out] + eff,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    if r.returncode != 0 or not os.path.exists(out):
        return None, desc
    sr, x = read_wav_float(out)
    if x.ndim > 1:
        x = x.mean(1)
    return x.astype(np.float32), desc


def room_irs(nr, rt, n):
    """A synthetic room's two impulse responses (left, right) of n samples: independent noise
    under an RT60 `rt` decay, a 10 ms fade-in, unit energy. nr: a numpy Generator."""
    env = np.exp(-6.9 * (np.arange(n) / SR) / rt)
    irs = []
    for _ in range(2):
        ir = nr.standard_normal(n) * env
        ir[: int(0.01 * SR)] *= np.linspace(0, 1, int(0.01 * SR))
        ir /= np.sqrt(np.sum(ir**2)) + 1e-9
        irs.append(ir)
    return irs


def stereo_reverb(rng, x):
    """Mono -> stereo with a random synthetic room (decaying noise IRs)."""
    rt = rng.uniform(0.2, 1.8)
    irs = room_irs(np.random.default_rng(rng.randint(0, 2**31)), rt, int(SR * min(rt, 1.5)))
    wet = rng.uniform(0.05, 0.5)
    y = np.stack([fftconvolve(x, ir)[: len(x)] for ir in irs], 1)
    return (x[:, None] * (1 - wet) + y * wet).astype(np.float32)


def make_vocals(rng, split, nsamp, tmp):
    out = np.zeros(nsamp, np.float32)
    pos = int(rng.uniform(0, 1.0) * SR)
    descs = []
    guard = 0
    while pos < nsamp and guard < 30:
        guard += 1
        x, d = synth_phrase(rng, split, tmp)
        if x is None or len(x) == 0:
            continue
        descs.append(d)
        x = x / (np.sqrt(np.mean(x**2)) + 1e-6) * rng.uniform(0.5, 1.5) * 0.1
        n = min(len(x), nsamp - pos)
        out[pos: pos + n] += x[:n]
        pos += n + int(rng.uniform(0.0, 0.8) * SR)
    if rng.random() < 0.8:
        st = stereo_reverb(rng, out)
    else:
        st = np.stack([out, out], 1)
    return st, sorted(set(descs))


# ---------------------------------------------------------------- MIDI
def vlq(n):
    b = [n & 0x7F]
    n >>= 7
    while n:
        b.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes(reversed(b))


def write_smf(path, events, tpq, tempo_us):
    """events: list of (tick, bytes). Single-track format-0 SMF."""
    events = sorted(events, key=lambda e: (e[0], 0 if e[1][0] & 0xF0 in (0x80, 0xB0, 0xC0) else 1))
    data = bytearray()
    data += vlq(0) + b"\xff\x51\x03" + tempo_us.to_bytes(3, "big")
    last = 0
    for tick, msg in events:
        data += vlq(tick - last) + msg
        last = tick
    data += vlq(0) + b"\xff\x2f\x00"
    with open(path, "wb") as f:
        f.write(b"MThd" + struct.pack(">IHHH", 6, 0, 1, tpq))
        f.write(b"MTrk" + struct.pack(">I", len(data)) + bytes(data))


def note(ev, ch, t0, dur, key, vel):
    ev.append((t0, bytes([0x90 | ch, key, vel])))
    ev.append((t0 + max(1, dur), bytes([0x80 | ch, key, 0])))


def setup(ev, t, ch, prog, pan, vol=100):
    ev.append((t, bytes([0xB0 | ch, 7, vol])))
    ev.append((t, bytes([0xB0 | ch, 10, pan])))
    ev.append((t, bytes([0xB0 | ch, 91, 40])))
    if prog is not None:
        ev.append((t, bytes([0xC0 | ch, prog])))


SCALES = {"major": [0, 2, 4, 5, 7, 9, 11], "minor": [0, 2, 3, 5, 7, 8, 10],
          "dorian": [0, 2, 3, 5, 7, 9, 10], "mixo": [0, 2, 4, 5, 7, 9, 10]}
# GM programs used for "other" (no basses, no voice-like, no sound effects)
OTHER_PROGS = [p for p in range(0, 104) if not (32 <= p <= 39) and p not in (52, 53, 54, 85, 91)]
BASS_PROGS = [32, 33, 34, 35, 36, 37, 38, 39, 43, 58, 87]


def compose(rng, seconds, segment_starts, tpq=480):
    """Return MIDI events; drums/bass/other placed at separate time offsets
    so one fluidsynth render can be sliced into stems."""
    bpm = rng.uniform(70, 170)
    tempo_us = int(60e6 / bpm)
    tick_s = tempo_us / 1e6 / tpq
    nbeats = int(seconds / (60.0 / bpm)) + 2
    root = rng.randint(0, 11)
    scale = SCALES[rng.choice(list(SCALES))]
    ev = []
    step = tpq // 4  # 16th
    swing = rng.random() < 0.25

    def tk(sec):
        return int(round(sec / tick_s))

    # chord progression (scale degrees)
    prog_deg = [rng.choice([0, 3, 4, 5, 1, 2, 6]) for _ in range(4)]
    beats_per_chord = rng.choice([2, 4, 4, 8])

    def chord_at(beat):
        return prog_deg[(beat // beats_per_chord) % 4]

    def pitch_of(deg, octave):
        d = deg % 7
        return 12 * octave + root + scale[d] + 12 * (deg // 7)

    # ---- drums (channel 9)
    off = tk(segment_starts[0])
    setup(ev, off, 9, rng.choice([0, 8, 16, 24, 25, 32, 40, 48]), rng.randint(48, 80))
    kick = [rng.random() < p for p in [0.95, 0.1, 0.3, 0.1, 0.2, 0.1, 0.4, 0.15] * 2]
    snare = [False] * 16
    for s in (4, 12):
        snare[s] = True
    for s in range(16):
        if rng.random() < 0.08:
            snare[s] = True
    hat_div = rng.choice([1, 2, 2, 4])
    hat_key = rng.choice([42, 42, 44, 46, 51, 53])
    kick_key = rng.choice([35, 36])
    snare_key = rng.choice([38, 40, 39, 37])
    extra = rng.choice([None, 45, 47, 50, 56, 54, 69, 70])
    for b in range(nbeats):
        for s4 in range(4):
            s = (b % 4) * 4 + s4
            t = off + b * tpq + s4 * step
            if swing and s4 % 2 == 1:
                t += step // 3
            if kick[s]:
                note(ev, 9, t, step, kick_key, rng.randint(90, 127))
            if snare[s]:
                note(ev, 9, t, step, snare_key, rng.randint(80, 127))
            if s4 % (4 // hat_div) == 0 or (hat_div == 4):
                note(ev, 9, t, step, hat_key, rng.randint(50, 100))
            if extra and rng.random() < 0.08:
                note(ev, 9, t, step, extra, rng.randint(60, 110))
        if b % 16 == 0:
            note(ev, 9, off + b * tpq, step, rng.choice([49, 57]), rng.randint(70, 110))

    # ---- bass (channel 0)
    off = tk(segment_starts[1])
    setup(ev, off, 0, rng.choice(BASS_PROGS), rng.randint(54, 74))
    boct = rng.choice([2, 3])
    patt = rng.choice(["root8", "root4", "walk", "synco"])
    for b in range(nbeats):
        deg = chord_at(b)
        t = off + b * tpq
        if patt == "root4":
            note(ev, 0, t, tpq - 20, pitch_of(deg, boct), rng.randint(80, 120))
        elif patt == "root8":
            for h in range(2):
                note(ev, 0, t + h * tpq // 2, tpq // 2 - 20, pitch_of(deg, boct), rng.randint(80, 120))
        elif patt == "walk":
            d2 = deg + rng.choice([0, 2, 4, 5, -1])
            note(ev, 0, t, tpq - 20, pitch_of(d2, boct), rng.randint(80, 120))
        else:
            for s4 in range(4):
                if rng.random() < 0.45:
                    d2 = deg + rng.choice([0, 0, 4, 7])
                    note(ev, 0, t + s4 * step, step * rng.choice([1, 2]), pitch_of(d2, boct), rng.randint(70, 120))

    # ---- other: chords + melody (+ optional arpeggio) on channels 1..4
    off = tk(segment_starts[2])
    nparts = rng.choice([1, 2, 2, 3])
    for pi in range(nparts):
        ch = 1 + pi
        setup(ev, off, ch, rng.choice(OTHER_PROGS), rng.randint(10, 117), rng.randint(70, 110))
        kind = ["chords", "melody", "arp"][pi % 3] if pi < 3 else "melody"
        if rng.random() < 0.3:
            kind = rng.choice(["chords", "melody", "arp"])
        octv = rng.choice([4, 5]) if kind != "chords" else rng.choice([4, 4, 5])
        b = 0
        while b < nbeats:
            deg = chord_at(b)
            t = off + b * tpq
            if kind == "chords":
                L = rng.choice([1, 2, 4])
                for d in (0, 2, 4) + ((6,) if rng.random() < 0.3 else ()):
                    note(ev, ch, t, L * tpq - 30, pitch_of(deg + d, octv), rng.randint(60, 100))
                b += L
            elif kind == "arp":
                for s4 in range(4):
                    d = [0, 2, 4, 7][rng.randint(0, 3)]
                    note(ev, ch, t + s4 * step, step, pitch_of(deg + d, octv), rng.randint(60, 100))
                b += 1
            else:
                L = rng.choice([1, 1, 2])
                sub = rng.choice([1, 2, 2, 4])
                for k in range(sub):
                    if rng.random() < 0.85:
                        d = deg + rng.choice([0, 1, 2, 3, 4, -1, -2, 5])
                        note(ev, ch, t + k * tpq * L // sub, tpq * L // sub - 10, pitch_of(d, octv), rng.randint(60, 110))
                b += L
    return ev, tempo_us, tpq, dict(bpm=round(bpm, 1), root=root)


def make_instruments(rng, split, seconds, nsamp, tmp):
    cfg = SPLITS[split]
    gap = 3.0
    seg = seconds + gap
    starts = [0.5, 0.5 + seg, 0.5 + 2 * seg]
    ev, tempo_us, tpq, info = compose(rng, seconds, starts)
    mid = os.path.join(tmp, "inst.mid")
    wav = os.path.join(tmp, "inst.wav")
    write_smf(mid, ev, tpq, tempo_us)
    fx = []
    if rng.random() < 0.5:
        fx = ["-R", "0", "-C", "0"]
    fonts = cfg["soundfonts"]
    sf = fonts[0] if len(fonts) == 1 else rng.choice(fonts)
    kit = None
    if cfg["kits"] > 0 and rng.random() < cfg["kits"]:
        kit = rng.choice(material.kits(cfg["kit_set"]))
    subprocess.run(["fluidsynth", "-ni", "-q", "-r", str(SR), "-g", "0.4"] + fx +
                   ["-F", wav, sf, mid], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=120, check=False)
    _, x = read_wav_float(wav)
    if x.ndim == 1:
        x = np.stack([x, x], 1)
    stems = []
    for s in starts:
        a = int(s * SR)
        y = x[a: a + nsamp]
        if len(y) < nsamp:
            y = np.concatenate([y, np.zeros((nsamp - len(y), 2), np.float32)])
        stems.append(y.astype(np.float32))
    if kit is not None:
        # the drums from the kit's recorded samples, on the same pattern (channel 10 note-ons)
        tick_s = tempo_us / 1e6 / tpq
        hits = [(t * tick_s - starts[0], m[1], m[2]) for t, m in ev if m[0] == 0x99 and m[2] > 0]
        stems[0] = material.render_kit(rng, kit, hits, nsamp)
    info = dict(info, soundfont=os.path.basename(sf), drumkit=kit)
    return stems, info


# ---------------------------------------------------------------- mixing
def rms(x):
    return float(np.sqrt(np.mean(x**2)) + 1e-8)


def pan(x, p):
    """constant-power pan of a stereo stem, p in [-1, 1]"""
    a = (p + 1) * np.pi / 4
    g = np.array([np.cos(a), np.sin(a)], np.float32) * np.sqrt(2)
    return x * g[None, :]


def make_clip(args):
    split, idx, seconds, out, seed = args
    rng = random.Random(seed)
    nsamp = int(seconds * SR)
    d = os.path.join(out, "%04d" % idx)
    os.makedirs(d, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mixdown_") as tmp:
        voc, vdesc = make_vocals(rng, split, nsamp, tmp)
        (drums, bass, other), info = make_instruments(rng, split, seconds, nsamp, tmp)
    stems = {"vocals": voc, "drums": drums, "bass": bass, "other": other}
    # random level per stem relative to vocals (dB)
    gains = {"vocals": 0.0, "drums": rng.uniform(-8, 4), "bass": rng.uniform(-8, 3),
             "other": rng.uniform(-8, 3)}
    for k in stems:
        stems[k] = stems[k] / rms(stems[k]) * 0.1 * 10 ** (gains[k] / 20)
    vpan = 0.0
    if rng.random() < 0.35:
        vpan = rng.uniform(-0.6, 0.6)
        stems["vocals"] = pan(stems["vocals"], vpan)
    mono = rng.random() < 0.12
    if mono:
        for k in stems:
            m = stems[k].mean(1, keepdims=True)
            stems[k] = np.repeat(m, 2, 1)
    mix = sum(stems.values())
    peak = float(np.max(np.abs(mix))) + 1e-9
    scale = rng.uniform(0.3, 0.95) / peak
    # quantise stems first and define mixture as their exact sum
    q = {}
    for k in stems:
        q[k] = np.clip(np.round(stems[k] * scale * 32767), -32768, 32767).astype(np.int32)
    m = q["vocals"] + q["drums"] + q["bass"] + q["other"]
    m = np.clip(m, -32768, 32767)
    for k, v in q.items():
        wavfile.write(os.path.join(d, k + ".wav"), SR, v.astype(np.int16))
    wavfile.write(os.path.join(d, "mixture.wav"), SR, m.astype(np.int16))
    meta = dict(id="%04d" % idx, split=split, seed=seed, seconds=seconds, voices=vdesc,
                gains_db={k: round(v, 2) for k, v in gains.items()}, vocal_pan=round(vpan, 2),
                mono=mono, **info)
    return meta


def run_cli(doc, make, splits, seeds):
    """The command line both dataset scripts share: clip i of --split is make((split, i, seconds,
    out, seeds[split] + seed_offset + i)) -> its meta dict, made on --jobs processes; the metas
    go to DIR/meta.jsonl in clip order."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=list(splits), required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed-offset", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    jobs = [(a.split, i, a.seconds, a.out, seeds[a.split] + a.seed_offset + i) for i in range(a.count)]
    metas = []
    with Pool(a.jobs) as p:
        for k, m in enumerate(p.imap(make, jobs)):
            metas.append(m)
            if (k + 1) % 20 == 0:
                print("%s: %d/%d" % (a.split, k + 1, a.count), file=sys.stderr, flush=True)
    with open(os.path.join(a.out, "meta.jsonl"), "w") as f:
        for m in metas:
            f.write(json.dumps(m) + "\n")


def main():
    run_cli(__doc__, make_clip, list(SPLITS), {k: v["seed"] for k, v in SPLITS.items()})


if __name__ == "__main__":
    main()
