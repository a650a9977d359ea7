"""Recorded material from Debian packages that widens make_dataset.py's data, and which of it
is held out of training (the out-of-domain sets).

  voices       Festival (`festival` + festvox-* packages): diphone, cluster-unit and HTS voices
               recorded from people, sung the same way as the espeak-ng / flite phrases
  drums        Hydrogen kits (`hydrogen-drumkits`): recorded WAV / FLAC / AIFF samples with
               velocity layers, sequenced here from the same drum patterns that make_dataset.py
               writes as General MIDI (the GM key picks the kit instrument by its name)
  instruments  other soundfonts (`timgm6mb-soundfont`, `musescore-general-soundfont`) next to
               FluidR3_GM

Held out of training (never in `train`): the Festival voices in FESTIVAL_HELDOUT, the kits in
KITS_HELDOUT and the soundfonts in SOUNDFONTS_HELDOUT. Not used: the Hindi / Marathi / Telugu
NSK voices (they crash on Latin text), FluidR3_GS (no presets in bank 0, renders silence) and
freepats (GUS patches, which fluidsynth does not read).
"""
import functools
import io
import os
import re
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
from scipy.io import wavfile

SR = 44100
FESTIVAL_TRAIN = ["kal_diphone", "ked_diphone", "upc_ca_ona_hts", "czech_dita", "czech_krb", "czech_ph",
                  "lp_diphone", "suo_fi_lj_diphone", "msu_ru_nsh_clunits"]
# one HTS voice, two women and two men, four languages
FESTIVAL_HELDOUT = ["cmu_us_slt_arctic_hts", "pc_diphone", "czech_machac", "hy_fi_mv_diphone"]

KITS_DIR = "/usr/share/hydrogen/data/drumkits"
# two acoustic kits and an electronic one
KITS_HELDOUT = ["ColomboAcousticDrumkit", "The Black Pearl 1.0", "HardElectro1"]

FLUID = "/usr/share/sounds/sf2/FluidR3_GM.sf2"
SOUNDFONTS_TRAIN = [FLUID, "/usr/share/sounds/sf2/TimGM6mb.sf2"]
SOUNDFONTS_HELDOUT = ["/usr/share/sounds/sf3/MuseScore_General.sf3"]


def kits(which):
    """The kits of `which`: "train" or "heldout"."""
    names = sorted(d for d in os.listdir(KITS_DIR) if os.path.isfile(os.path.join(KITS_DIR, d, "drumkit.xml")))
    if which == "train":
        return [k for k in names if k not in KITS_HELDOUT]
    return list(KITS_HELDOUT)


def festival_phrase(voice, text, raw):
    """Speak `text` with a Festival voice into the WAV file `raw` (the voice's own rate)."""
    subprocess.run(["text2wave", "-eval", "(voice_%s)" % voice, "-o", raw], input=text.encode(),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False)



def move_formants(path, ratio):
    """Move the formants of the speech in the WAV file `path` by `ratio` in frequency, in place,
    keeping its pitch and timing: per STFT frame the spectral envelope (the log magnitude's
    cepstrum below 1.8 ms, under the pitch period of voices up to ~550 Hz) is warped to
    envelope(f / ratio) and the frame's fine structure (the harmonics) kept. A speaker's
    vocal tract made shorter (ratio > 1) or longer: a new voice from a recorded one."""
    from scipy.signal import istft, stft

    sr, x = wavfile.read(path)
    x = x.astype(np.float32) / (32768.0 if x.dtype == np.int16 else 1.0)
    if x.ndim > 1:
        x = x.mean(1)
    n_fft, hop = 1024 if sr > 24000 else 512, 128 if sr > 24000 else 64
    _, _, Z = stft(x, sr, nperseg=n_fft, noverlap=n_fft - hop)
    logm = np.log(np.abs(Z) + 1e-7)
    cep = np.fft.irfft(logm, n_fft, axis=0)
    keep = int(sr * 0.0018)
    cep[keep:n_fft - keep + 1] = 0
    env = np.fft.rfft(cep, axis=0).real
    src = np.minimum(np.arange(env.shape[0]) / ratio, env.shape[0] - 1.001)
    i0 = src.astype(int)
    frac = (src - i0)[:, None]
    warped = env[i0] * (1 - frac) + env[i0 + 1] * frac
    _, y = istft(Z * np.exp(warped - env), sr, nperseg=n_fft, noverlap=n_fft - hop)
    y = y[: len(x)]
    y *= min(1.0, 0.98 / (np.max(np.abs(y)) + 1e-9))
    wavfile.write(path, sr, (y * 32767).astype(np.int16))


# ---------------------------------------------------------------- Hydrogen kits
# General MIDI drum key -> the roles that can play it, in order of preference
GM_ROLES = {35: ["kick"], 36: ["kick"], 37: ["stick", "snare"], 38: ["snare"], 40: ["snare"],
            39: ["clap", "snare"], 42: ["hat"], 44: ["pedal", "hat"], 46: ["open", "hat"],
            51: ["ride", "crash"], 53: ["bell", "ride", "crash"], 49: ["crash", "ride"], 57: ["crash", "ride"],
            45: ["tom"], 47: ["tom"], 50: ["tom"], 56: ["cowbell", "perc"], 54: ["perc"], 69: ["perc"],
            70: ["perc"]}
ROLE_PATTERNS = [
    ("kick", r"kick|bass ?drum|\bbd\b|bassdrum|thump|djembe\d? bass|dundun"),
    ("stick", r"stick|rim"),
    ("clap", r"clap|snap"),
    ("snare", r"snare|slap|sd\b"),
    ("pedal", r"pedal"),
    ("open", r"open|opened|ohh|semi"),
    ("hat", r"hat|hh|hi-hat|shaker|maraca|tambourine"),
    ("bell", r"bell|cup"),
    ("ride", r"ride"),
    ("crash", r"crash|china|splash|cymbal"),
    ("tom", r"tom|bongo|conga|djembe|tone|drum"),
    ("cowbell", r"cowbell|clave|woodblock|block"),
    ("perc", r"perc|cabasa|tamb|shaker|maraca|guiro|fx|zap|glass"),
]


@functools.lru_cache(maxsize=None)
def load_kit(name):
    """{role: [instrument]}, instrument = dict(name, gain, pan (L, R gains), layers[(min, max, gain, path)])."""
    root = os.path.join(KITS_DIR, name)
    tree = ET.parse(os.path.join(root, "drumkit.xml")).getroot()
    ns = re.match(r"\{.*\}", tree.tag)
    ns = ns.group(0) if ns else ""

    def text(el, tag, default=None):
        c = el.find(ns + tag)
        return c.text if c is not None and c.text is not None else default

    instruments = []
    for ins in tree.iter(ns + "instrument"):
        layers = []
        for ly in ins.iter(ns + "layer"):
            fn = text(ly, "filename")
            if fn and os.path.isfile(os.path.join(root, fn)):
                layers.append((float(text(ly, "min", 0)), float(text(ly, "max", 1)), float(text(ly, "gain", 1)),
                               os.path.join(root, fn)))
        fn = text(ins, "filename")  # old single-sample kits
        if not layers and fn and os.path.isfile(os.path.join(root, fn)):
            layers.append((0.0, 1.0, 1.0, os.path.join(root, fn)))
        if not layers or text(ins, "isMuted") == "true":
            continue
        instruments.append(dict(name=(text(ins, "name") or "").lower(),
                                gain=float(text(ins, "volume", 1)) * float(text(ins, "gain", 1)),
                                pan=(float(text(ins, "pan_L", 1)), float(text(ins, "pan_R", 1))), layers=layers))
    roles = {}
    for ins in instruments:
        for role, pat in ROLE_PATTERNS:
            if re.search(pat, ins["name"]):
                roles.setdefault(role, []).append(ins)
                break
    roles["any"] = instruments
    return roles


@functools.lru_cache(maxsize=512)
def load_sample(path):
    """A kit sample as float32 [n, 2] at 44.1 kHz (sox reads WAV, FLAC and AIFF)."""
    r = subprocess.run(["sox", "-R", path, "-t", "wav", "-r", str(SR), "-c", "2", "-b", "16", "-e", "signed", "-"],
                       capture_output=True, timeout=60)
    if r.returncode != 0:
        return np.zeros((1, 2), np.float32)
    _, x = wavfile.read(io.BytesIO(r.stdout))
    return x.astype(np.float32) / 32768.0


def render_kit(rng, kit, hits, nsamp):
    """hits: [(seconds, gm_key, velocity 1..127)] -> stereo float32 [nsamp, 2]. Each GM key is
    played by one instrument of the kit chosen for it (by role, else any instrument), spread
    over the stereo field around the kit's own pan; the velocity picks the sample layer."""
    roles = load_kit(kit)
    chosen = {}
    out = np.zeros((nsamp, 2), np.float32)
    for t, key, vel in hits:
        if key not in chosen:
            wanted = GM_ROLES.get(key, ["perc"])
            ins = rng.choice(next((roles[r] for r in wanted if roles.get(r)), roles["any"]))
            p = rng.uniform(-0.1, 0.1) if wanted[0] in ("kick", "snare") else rng.uniform(-0.5, 0.5)
            a = (p + 1) * np.pi / 4
            chosen[key] = (ins, np.array([np.cos(a) * ins["pan"][0], np.sin(a) * ins["pan"][1]], np.float32) * np.sqrt(2))
        ins, g = chosen[key]
        v = vel / 127.0
        layers = [ly for ly in ins["layers"] if ly[0] <= v <= ly[1]] or ins["layers"]
        lo, hi, lgain, path = rng.choice(layers)
        x = load_sample(path)
        a = int(t * SR)
        if a >= nsamp or a < 0:
            continue
        n = min(len(x), nsamp - a)
        out[a: a + n] += x[:n] * (g * lgain * ins["gain"] * (0.35 + 0.65 * v))[None, :]
    return out
