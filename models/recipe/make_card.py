#!/usr/bin/python3
"""Write models/MODEL_CARD.md from the build's artefacts (eval JSONs,
checkpoints, dataset metadata, ONNX files)."""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import material  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def load(p):
    with open(p) as f:
        return json.load(f)


def meta_stats(*paths):
    voices, n, secs = set(), 0, 0.0
    for path in paths:
        for line in open(path):
            m = json.loads(line)
            voices |= set(m["voices"])
            n += 1
            secs += m["seconds"]
    return n, secs, voices


def fmt(d):
    return ", ".join("%s %.2f" % (k, v) for k, v in d.items())


def vocalsplit_section(work, split_data, models):
    """The card's section on the vocal-split model, from its evaluation, checkpoint and dataset."""
    ev = load(os.path.join(work, "eval_vocalsplit.json"))
    ck = torch.load(os.path.join(work, "vocalsplit.pt"))
    size = os.path.getsize(os.path.join(models, "vocalsplit.onnx"))
    tr = [json.loads(x) for x in open(os.path.join(split_data, "train/meta.jsonl"))]
    va = [json.loads(x) for x in open(os.path.join(split_data, "valid/meta.jsonl"))]
    med, floor = ev["median"], ev["floor"]
    L = []
    w = L.append
    w("## `vocalsplit`: the whole vocal -> lead, harmony, reverb\n")
    # build.sh's cycles, each kept as vocalsplit_cycleN.pt, that were run (else the network itself): the first three
    # when the network's cfg has what the next one added (the cross-channel terms, the phase features, the echo
    # features); the fourth and fifth (the warm restarts after them add no feature) when the cycle before was kept
    def kept(i, ran):
        path = os.path.join(work, "vocalsplit_cycle%d.pt" % i)
        return torch.load(path) if ran and os.path.exists(path) else ck

    c1, c2, c3 = (kept(i, ck["cfg"].get(key)) for i, key in ((1, "cross"), (2, "ipd"), (3, "echo")))
    c4 = kept(4, c3 is not ck)
    # the warm restarts after the fourth cycle (they add no feature): each kept but the last, which is the network
    restarts, i = [], 5
    while c4 is not ck and (not restarts or restarts[-1] is not ck):
        restarts.append(kept(i, True))
        i += 1
    w("Run by the worker after the vocal/backing split (`SEPARATION_MODEL_VOCAL_SPLIT`): its input is the whole vocal. "
      "Same network as above with 3 stems (`lead`, `harmony`, `reverb`; softmax masks, so the three estimates sum to the "
      "input below dim_f), %s, %d parameters, `vocalsplit.onnx` %.1f MB, trained for %d steps / %.1f min from the vocals "
      "network's weights (`--init-onnx`: its fused BatchNorms stay frozen; the output layers start fresh), batch 4 x 128 "
      "frames, lr 6e-4 cosine, loss: the negative SDR of lead, harmony and reverb weighted 0.5 / 1.5 / 1.5, a part that is "
      "silent in an example left out of its term, weights averaged (EMA 0.995), on 2 CPU cores."
      % ("with the refinement block" if ck["cfg"].get("refine") else "without the refinement block", ck["params"],
         size / 1e6, c1["step"], c1["minutes"]))
    if c1 is not ck:
        w("Then a second cosine cycle of %d steps / %.1f min (`--cross --freeze-bn --init`, lr 3e-4, weights 0.5 / 1.5 / 2) "
          "added the cross-channel terms: each output channel also takes a complex multiple of the other input channel "
          "(a 2x2 complex filter per bin, from the decoder and the refinement block, zero-initialised so the cycle starts "
          "from the first one's function; the terms sum to zero over the stems, so the three estimates still sum to the "
          "input). A dry voice panned to one place cancels in a difference of the channels where the stereo reverb, "
          "decorrelated between them, does not; a per-channel mask cannot use that."
          % (c2["step"], c2["minutes"]))
    if c2 is not ck:
        w("A third cycle (`--cross --ipd --freeze-bn --init`, lr 3e-4, weights 0.5 / 1.5 / 2, a %.0f-min cosine stopped "
          "after %d steps / %.1f min) added the inter-channel phase to the input features: the cosine and sine of the "
          "phase difference between L and R per bin (the magnitudes fix only the cosine; an amplitude-panned voice is in "
          "phase between the channels, the decorrelated reverb is not); their weights start at zero."
          % (c3["schedule_minutes"], c3["step"], c3["minutes"]))
    if c3 is not ck:
        w("A fourth cycle of %d steps / %.1f min (`--cross --ipd --echo --freeze-bn --init`, lr 3e-4, the same weights) "
          "added the echo features: per chunk, the delay at which the onsets repeat best (70 ms to 0.93 s) and the echo's "
          "gain (the onsets' least-squares gain on themselves one delay earlier) give, per bin, an echo mask proposed as "
          "min(1, gain x |X(t - delay)| / |X(t)|), next to how clearly the onsets repeat. A feedback echo is a late, darker "
          "copy of the voice, which a network that sees only a frame's neighbours cannot tell from the voice. The proposal "
          "enters the input features (weights starting at zero) and goes straight to the mask logits through a 1x1 layer "
          "that starts with the reverb's logits at 2 x the proposal."
          % (c4["step"], c4["minutes"]))
    if restarts:
        # build.sh's flags for them, in order: the reverb's loss weight, and the seed (another order of examples)
        flags = [("0.5 / 1.5 / 2.5", 0), ("0.5 / 1.5 / 3", 1), ("0.5 / 1.5 / 3", 2), ("0.5 / 1.5 / 3", 3)]
        w("Then %d warm restarts, each from the cycle before with its flags (lr 3e-4): %s; the reverb weighted more in "
          "the first two%s."
          % (len(restarts), ", ".join("%d steps / %.1f min (weights %s%s)" % (c["step"], c["minutes"], wt, ", `--seed %d`" % sd if sd else "")
                                      for c, (wt, sd) in zip(restarts, flags)),
             ", the later ones only another order of examples" if len(restarts) > 2 else ""))
    w("The service publishes `harmony` and `reverb` as the network outputs them and the lead as the whole vocal minus "
      "those two, so the parts add up to the whole vocal exactly; `lead` below is that published lead, `lead (network)` "
      "the network's own lead output.\n")
    w("Held-out set (`make_vocalsplit.py --split valid`): %d clips x %.0f s, voices as in the validation set above "
      "(held out of training); %d with a harmony, %d with reverb. Median SDR:\n"
      % (ev["clips"], va[0]["seconds"], ev["clips_with"]["harmony"], ev["clips_with"]["reverb"]))
    orc, mwf = ev.get("oracle_irm", {}), ev.get("oracle_mwf", {})
    o = lambda k: " | ".join("%.2f dB" % d[k] if k in d else "-" for d in (orc, mwf))
    ci = lambda e, k: "%.2f-%.2f" % tuple(e["ci95"][k]) if "ci95" in e else "-"
    w("| part | vocalsplit | 95 % interval | floor | above the floor | ideal ratio mask | ideal 2x2 Wiener filter |")
    w("|---|---|---|---|---|---|---|")
    w("| lead | %.2f dB | %s | %.2f dB (the whole vocal as the lead) | %+.2f dB | %s |"
      % (med["lead"], ci(ev, "lead"), floor["lead"], med["lead"] - floor["lead"], o("lead")))
    w("| lead (network) | %.2f dB | %s | %.2f dB | %+.2f dB | | |"
      % (med["lead(net)"], ci(ev, "lead(net)"), floor["lead"], med["lead(net)"] - floor["lead"]))
    w("| harmony | %.2f dB | %s | 0 dB (silence) | %+.2f dB | %s |" % (med["harmony"], ci(ev, "harmony"), med["harmony"], o("harmony")))
    w("| reverb | %.2f dB | %s | 0 dB (silence) | %+.2f dB | %s |" % (med["reverb"], ci(ev, "reverb"), med["reverb"], o("reverb")))
    w("\nThe interval is the median's 95 % bootstrap interval over the clips (2,000 resamples).")
    big = os.path.join(work, "eval_vocalsplit_200.json")
    if os.path.exists(big):
        eb = load(big)
        w("\nOn a larger held-out set, %d clips (`make_vocalsplit.py --split valid --count %d`: clips of the same seeds "
          "as the 40 above and %d more), median SDR (95 %% interval): lead %.2f dB (%s; floor %.2f dB, %+.2f over it), "
          "harmony %.2f dB (%s, over its %d clips with a harmony), reverb %.2f dB (%s); the ideal ratio mask gives "
          "%.2f / %.2f / %.2f dB and the ideal 2x2 Wiener filter %.2f / %.2f / %.2f dB there."
          % (eb["clips"], eb["clips"], eb["clips"] - ev["clips"], eb["median"]["lead"], ci(eb, "lead"),
             eb["floor"]["lead"], eb["median"]["lead"] - eb["floor"]["lead"], eb["median"]["harmony"], ci(eb, "harmony"),
             eb["clips_with"]["harmony"], eb["median"]["reverb"], ci(eb, "reverb"),
             *(eb.get(k, {}).get(p, float("nan")) for k in ("oracle_irm", "oracle_mwf") for p in ("lead", "harmony", "reverb"))))
    w("\nThe two ideal columns use the true parts: the ratio mask is the per-channel real mask |part| / sum of |parts| "
      "per bin (what a mask per channel could reach); the Wiener filter is per bin the part's 2x2 spatial covariance "
      "times the inverse of the whole vocal's, both averaged over 3 x 3 neighbouring bins and frames (what a network "
      "with the cross-channel terms could reach with perfect statistics).")
    if ev.get("reverb_by_wetness"):
        dr, we = ev["reverb_by_wetness"]["drier"], ev["reverb_by_wetness"]["wetter"]
        w("\nThe reverb by how wet the clip is (the reverb's level against the dry voices'): %.2f dB on the drier half "
          "(%.1f to %.1f dB), %.2f dB on the wetter half (%.1f to %.1f dB)."
          % (dr["reverb"], dr["wet_db"][0], dr["wet_db"][1], we["reverb"], we["wet_db"][0], we["wet_db"][1]))
    if ev.get("reverb_by_echo"):
        e = ev["reverb_by_echo"]
        w("\nThe reverb on the %d clips with an echo: %.2f dB; on the %d without: %.2f dB."
          % (e["echo"]["clips"], e["echo"]["reverb"], e["none"]["clips"], e["none"]["reverb"]))
    if ev.get("harmony_leak_db") is not None:
        w("\nOn the %d clips without a harmony, the harmony estimate's median level is %.1f dB relative to the whole vocal."
          % (ev["clips"] - ev["clips_with"]["harmony"], ev["harmony_leak_db"]))
    w("\nData (`make_vocalsplit.py`): %d train clips x %.0f s (%d without harmony, %d with an echo, %d with a room, %d with a "
      "doubled lead; %d harmony voices, %d of them other phrases rather than the lead shifted). Every part is known exactly: "
      "lead = the dry lead (and its double), harmony = the other dry voices, reverb = echo + room (the wet part of all voices), "
      "vocals = their exact sum. Evaluate: `python3 models/recipe/evaluate.py --ckpt %s --name vocalsplit --oracle --valid %s`.\n"
      % (len(tr), tr[0]["seconds"], sum(1 for m in tr if not m["harmonies"]), sum(1 for m in tr if "echo" in m),
         sum(1 for m in tr if "room" in m), sum(1 for m in tr if "double" in m), sum(len(m["harmonies"]) for m in tr),
         sum(1 for m in tr for h in m["harmonies"] if h["kind"] == "melody"), "$WORK/vocalsplit.pt", "$SPLIT_DATA/valid"))
    return L


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/tmp/mixdown-data")
    ap.add_argument("--work", default="/tmp/mixdown-train")
    ap.add_argument("--models", default=os.path.join(HERE, ".."))
    ap.add_argument("--notes", default="")
    ap.add_argument("--train", default="train-synthetic",
                    help="the comma-separated make_dataset.py splits under --data the networks learnt (build.sh's SEP_TRAIN)")
    ap.add_argument("--split-data", default="/tmp/mixdown-vocalsplit")
    ap.add_argument("--vocalsplit-only", action="store_true", help="print only the vocal-split section")
    a = ap.parse_args()
    if a.vocalsplit_only:
        print("\n".join(vocalsplit_section(a.work, a.split_data, a.models)))
        return
    train_splits = a.train.split(",")
    ntr, str_, vtr = meta_stats(*(os.path.join(a.data, s, "meta.jsonl") for s in train_splits))
    widened = "train" in train_splits
    nva, sva, vva = meta_stats(os.path.join(a.data, "valid/meta.jsonl"))
    ev = {n: load(os.path.join(a.work, "eval_%s.json" % n)) for n in ("vocals", "stems")}
    ck = {n: torch.load(os.path.join(a.work, "%s.pt" % n)) for n in ("vocals", "stems")}
    phases = []
    for name in ("stems_phase1.pt", "stems_phase2.pt"):
        p = os.path.join(a.work, name)
        if os.path.exists(p):
            c = torch.load(p)
            phases.append((c["step"], c["minutes"]))
    phases.append((ck["stems"]["step"], ck["stems"]["minutes"]))
    st_steps = sum(p[0] for p in phases)
    st_min = sum(p[1] for p in phases)
    man = {n: load(os.path.join(a.models, n + ".json")) for n in ("vocals", "stems")}
    size = {n: os.path.getsize(os.path.join(a.models, n + ".onnx")) for n in ("vocals", "stems")}
    cfg = ck["stems"]["cfg"]
    ve, se = ev["vocals"], ev["stems"]
    L = []
    w = L.append
    w("# Mixdown default separation models: `vocals` and `stems`\n")
    w("Small MDX-Net-signature mask networks trained from scratch on this machine on fully synthetic "
      "music made from Debian packages (no pretrained weights, no downloaded audio). "
      "Reproduce with `bash models/recipe/build.sh` (see `models/recipe/README.md`).\n")
    w("| model | file | size | params | stems | training |")
    w("|---|---|---|---|---|---|")
    base = os.path.join(a.work, "vocals_base.pt")
    if not os.path.exists(base):
        vocals_training = "%d steps / %.1f min fine-tuning, initialised from the stems net" % (ck["vocals"]["step"], ck["vocals"]["minutes"])
    else:
        vb = torch.load(base)
        vocals_training = ("%d steps / %.1f min fine-tuning from the stems net, then %d steps / %.1f min on Festival voices with "
                           "moved formants + synthetic clips (BatchNorms frozen)" % (vb["step"], vb["minutes"], ck["vocals"]["step"],
                                                                                     ck["vocals"]["minutes"]))
    w("| vocals | `vocals.onnx` | %.1f MB | %d | vocals (+ backing = mixture - vocals) | %s |" % (
        size["vocals"] / 1e6, ck["vocals"]["params"], vocals_training))
    w("| stems | `stems.onnx` | %.1f MB | %d | vocals, drums, bass, other | %d steps / %.1f min (%s steps in %d cosine cycles of %s min) |" % (
        size["stems"] / 1e6, ck["stems"]["params"], st_steps, st_min, " + ".join("%d" % p[0] for p in phases), len(phases),
        " + ".join("%.1f" % p[1] for p in phases)))
    w("\nTraining ran on 2 shared CPU cores (torch 1.13 CPU, `torch.set_num_threads(2)`).\n")
    w("## Held-out validation (median SDR over %d clips of %.0f s)\n" % (nva, sva / nva))
    w("SDR per clip = 10 log10(sum s^2 / sum (s - s_hat)^2) over the whole clip, stereo, computed by "
      "`models/recipe/evaluate.py` with the engine's convention: torch.stft-style STFT (n_fft %d, hop %d, "
      "periodic Hann, center=True), chunks of hop*(dim_t-1) samples, output bins >= dim_f and bins 0..2 zeroed, "
      "n_fft/2 trimmed per chunk side, Hann-weighted overlap-add with 50%% overlap. `backing` = mixture - vocals.\n"
      % (cfg["n_fft"], cfg["hop"]))
    b = ve["baseline"]
    w("| stem | vocals model | stems model | baseline |")
    w("|---|---|---|---|")
    w("| vocals | %.2f dB | %.2f dB | %.2f dB (centre channel (L+R)/2) |" % (ve["median"]["vocals"], se["median"]["vocals"], b["vocals"]))
    w("| backing | %.2f dB | %.2f dB | %.2f dB (mixture - centre channel) |" % (ve["median"]["backing"], se["median"]["backing"], b["backing"]))
    for s in ("drums", "bass", "other"):
        w("| %s | - | %.2f dB | %.2f dB (mixture as estimate) |" % (s, se["median"][s], b[s + "(mixture)"]))
    w("| 4-stem mean | - | %.2f dB | |" % se["median"]["mean4"])
    w("\nPython/torch throughput during evaluation (incl. STFT/iSTFT, 50%% overlap, 2 threads): vocals %.0fx, stems %.0fx realtime.\n"
      % (ve["realtime_torch"], se["realtime_torch"]))
    if a.notes:
        w(a.notes + "\n")
    if os.path.exists(os.path.join(a.work, "eval_vocalsplit.json")):
        L.extend(vocalsplit_section(a.work, a.split_data, a.models))
    w("## ONNX interface (MDX-Net convention)\n")
    w("- input `input`: float32 `[batch, 4, %d, %d]` = [L.re, L.im, R.re, R.im] of the first dim_f bins of the STFT of a chunk of %d samples (dynamic batch, fixed dim_t)." % (cfg["dim_f"], cfg["dim_t"], cfg["hop"] * (cfg["dim_t"] - 1)))
    w("- `vocals.onnx` output `output`: float32 `[batch, 4, %d, %d]` = complex spectrogram of the vocals (mask applied inside the graph)." % (cfg["dim_f"], cfg["dim_t"]))
    w("- `stems.onnx` output `output`: float32 `[batch, 4, 4, %d, %d]`, stems in manifest order vocals, drums, bass, other (the four estimates sum to the input)." % (cfg["dim_f"], cfg["dim_t"]))
    w("- ONNX opset 17, exported with `torch.onnx.export`.\n")
    w("Manifests:\n")
    for n in ("vocals", "stems"):
        w("```json\n%s\n```" % json.dumps(man[n], indent=2))
    w("\n## Architecture\n")
    w("Input features: |L|, |R|, |L+R|/2, |L-R|/2 of the given bins, compressed with ^0.3. "
      "Encoder: 4 Conv2d+BN+ReLU stages (channels 24, 40, 56, 80) striding only along frequency "
      "(x4, x2, x2, x2: %d -> %d bins). Bottleneck: (channels x bins) flattened to 1x1 Conv1d -> %d channels, "
      "10 residual dilated temporal Conv1d blocks (kernel 3, dilations 1..32, twice; receptive field ~3.6 s each side "
      "across the stack), projected back. Decoder: ConvTranspose2d upsampling with additive skips and 3x3 Conv2d+BN+ReLU; "
      "two heads: per-channel (L/R) real mask logits for 4 stems (softmax over stems) and a tanh-bounded complex correction "
      "(re/im per channel and stem, zero-mean across stems, zero-initialised); complex mask = softmax + correction, "
      "output = complex mask x complex input, so the four stem estimates always sum exactly to the input. "
      "The `vocals` network has the same architecture and keeps the 4-way softmax internally but only outputs the vocals estimate.\n"
      % (cfg["dim_f"], cfg["dim_f"] // 32, cfg.get("tch", 256)))
    if cfg.get("tch", 256) > 256:
        w("The temporal stack was widened from 256 to %d channels at the start of the last stems cycle, keeping the "
          "network's function: the old channels' weights are copied, the new channels are fed by fresh weights and read "
          "through weights that start at zero (`train.py --tch`).\n" % cfg["tch"])
    if cfg.get("refine"):
        w("Full-resolution refinement (added in the last stems cycle, zero-initialised so it starts as a no-op): the decoder's "
          "last features are brought back to every bin (ConvTranspose2d, %d channels), concatenated with that bin's four input "
          "features, one %dx%d Conv2d+ReLU and a 1x1 Conv2d that adds to both heads' logits, so masks can follow single "
          "harmonics instead of 4-bin groups.\n" % (cfg.get("refine_ch", 12), *cfg.get("refine_k", (5, 3))))
    w("Loss: negative SDR on the complex spectrogram (over the given bins) per stem, with a mixture-energy floor "
      "(1e-3 x mixture energy) so silent targets do not dominate; stems net: mean over 4 stems + 0.5 x vocals + 0.25 x backing; "
      "vocals net: vocals + backing + 0.2 x mean(drums, bass, other). AdamW, lr 1e-3 (vocals fine-tune 4e-4), "
      "cosine decay over a wall-clock budget, batch 6 x 128 frames (2.95 s).\n")
    w("Augmentation: 70% of training examples remix stems drawn from different random clips and offsets "
      "(30% keep a coherent clip); per-stem random gain (vocals +-5 dB, others -9..+4 dB), random L/R swap, 4% dropped stems, "
      "25% random vocal re-pan, 10% mono, random overall gain -12..+6 dB.\n")
    w("## Data\n")
    w("All audio synthesised by `models/recipe/make_dataset.py` (44.1 kHz stereo, 16-bit):\n")
    w("- train (`%s`): %d clips x %.0f s (%.1f min of mixtures), %d distinct voices; valid: %d clips x %.0f s, %d distinct voices; "
      "no voice in common (held-out espeak-ng languages x held-out variants, held-out flite voices), disjoint seeds "
      "(make_dataset.py's `SPLITS`)." % ("`, `".join(train_splits), ntr, str_ / ntr, str_ / 60, len(vtr), nva, sva / nva, len(vva)))
    w("- vocals: espeak-ng (~90 languages x ~80 voice variants; MBROLA voices not used) and flite (train: kal, kal16, rms, awb_time; "
      "valid: slt, awb) speaking random pseudo-words, random speed (90-220 wpm), base pitch, SSML pitch range, then sox "
      "`pitch` (+-5 semitones) and a sequence of random `bend`s (held notes of 0.12-0.5 s jumping by up to 7 semitones), "
      "optional `tempo`, synthetic stereo reverb (decaying noise IRs, RT60 0.2-1.8 s) and 35%% off-centre panning. "
      "%s 40%% of phrases are sung the same way by Festival voices recorded from people (%s); %s are held out "
      "(`models/recipe/material.py`)." % ("In `train`," if widened else "Not learnt by these networks: in the widened `train` split,",
                                          ", ".join(material.FESTIVAL_TRAIN), ", ".join(material.FESTIVAL_HELDOUT)))
    w("- drums, bass, other: MIDI written by the recipe's own SMF writer, rendered with fluidsynth + FluidR3_GM.sf2: "
      "random tempo 70-170 bpm, 16-step drum patterns on channel 10 (random GM drum kits), bass lines (root/eighths/walking/"
      "syncopated, GM bass programs), 1-3 parts of chords/melody/arpeggios in random keys/modes with random GM programs "
      "(no voice-like programs) and random pans; reverb/chorus on in 50%%. %s the instruments are rendered with "
      "FluidR3_GM or TimGM6mb (one per clip; MuseScore_General is held out) and half the clips take their drums from a "
      "Hydrogen kit's recorded samples, sequenced on the same pattern (%d kits; %s held out)."
      % ("In `train`," if widened else "In the widened `train` split (not learnt by these networks),",
         len(material.kits("train")), ", ".join(material.KITS_HELDOUT)))
    w("- mix: stems normalised then random relative gains, 12% mono mixes, random peak level; mixture = exact sum of the stems.\n")
    w("Validation voices: %s\n" % ", ".join(sorted(vva)))
    w("## Limitations\n")
    w("Trained only on synthetic speech-like vocals and General MIDI instruments; expect much lower quality on real "
      "recordings than the synthetic validation numbers suggest. Only bins below %.0f Hz are modelled "
      "(dim_f %d of n_fft %d): the vocals estimate has no content above that, so it ends up in `backing`; "
      "multi-stem estimates lose it (hi-hats/cymbals partly)." % (cfg["dim_f"] * 44100 / cfg["n_fft"], cfg["dim_f"], cfg["n_fft"]))
    w("\n## Reproduce\n")
    w("```bash\n# Debian 12: apt-get install -y python3-torch python3-onnx libopenblas0-pthread python3-numpy python3-scipy \\\n"
      "#   espeak-ng flite sox fluidsynth fluid-soundfont-gm timgm6mb-soundfont musescore-general-soundfont \\\n"
      "#   hydrogen-drumkits festival festvox-kallpc16k festvox-kdlpc16k festvox-italp16k festvox-itapc16k \\\n"
      "#   festvox-czech-dita festvox-czech-krb festvox-czech-machac festvox-czech-ph festvox-ru \\\n"
      "#   festvox-suopuhe-lj festvox-suopuhe-mv festvox-us-slt-hts festvox-ca-ona-hts\n"
      "bash models/recipe/build.sh   # ~145 min on 2 cores for vocals and stems; env STEMS1_MIN / STEMS2_MIN / STEMS3_MIN / VOCALS_MIN / VOCALSFT_MIN / SEP_TRAIN / NSYN / NFORM / DATA / WORK\n```\n")
    w("Individual steps are listed in `models/recipe/README.md`. Results vary slightly run to run "
      "(time-budgeted training on a shared machine; data is seed-deterministic).")
    with open(os.path.join(a.models, "MODEL_CARD.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    main()
