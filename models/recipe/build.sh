#!/bin/bash
# Reproduce models/vocals.onnx, models/stems.onnx and models/vocalsplit.onnx from scratch.
# Requires Debian packages: python3-torch python3-onnx python3-numpy python3-scipy
#   libopenblas0-pthread espeak-ng flite sox fluidsynth fluid-soundfont-gm timgm6mb-soundfont
#   musescore-general-soundfont hydrogen-drumkits festival and the festvox voices material.py names
# Usage: bash models/recipe/build.sh     (env overrides: DATA, WORK, OUT (where the models go, default models/),
#        STEMS1_MIN, STEMS2_MIN, STEMS3_MIN, VOCALS_MIN, VOCALSFT_MIN, SEP_TRAIN, NSYN, NTRAIN, NFORM, SPLIT_DATA, SPLIT_NTRAIN, SPLIT_MIN, SPLIT2_MIN, SPLIT3_MIN, SPLIT3_STOP, SPLIT4_MIN, SPLIT5_MIN, SPLIT6_MIN, SPLIT7_MIN, SPLIT8_MIN;
#        ONLY=vocalsplit builds the vocal-split model alone, from $FROM/vocals.onnx; ONLY=widen fine-tunes the models in $FROM
#        (default models/) on the widened data for STEMSFT_MIN / VOCALSFT_MIN minutes; ONLY=formants fine-tunes $FROM/vocals.onnx
#        on Festival voices with moved formants (the last step of the vocals network); ONLY=separation trains and evaluates
#        the stems and vocals networks alone, without the vocal split)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
MODELS="${OUT:-$(cd "$HERE/.." && pwd)}"
FROM="${FROM:-$(cd "$HERE/.." && pwd)}"
PY=/usr/bin/python3
# glibc keeps the training steps' large buffers instead of mapping and unmapping (and faulting in)
# them every step (a step of the vocal-split network alone: 0.95 -> 0.80 s; the whole training loop
# gains a few per cent)
export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-33554432} MALLOC_TRIM_THRESHOLD_=${MALLOC_TRIM_THRESHOLD_:-17179869184}
DATA=${DATA:-/tmp/mixdown-data}
WORK=${WORK:-/tmp/mixdown-train}
# the training splits of the stems and vocals networks (comma-separated make_dataset.py splits): by default
# the synthetic material alone, as the committed files learnt (NSYN clips); `train,train-synthetic` adds the
# widened material (NTRAIN clips), measured and not adopted (models/MODEL_CARD.md)
SEP_TRAIN=${SEP_TRAIN:-train-synthetic}
NTRAIN=${NTRAIN:-400}
NSYN=${NSYN:-400}
NFORM=${NFORM:-360}
STEMS1_MIN=${STEMS1_MIN:-16}
STEMS2_MIN=${STEMS2_MIN:-26}
STEMS3_MIN=${STEMS3_MIN:-25}
VOCALS_MIN=${VOCALS_MIN:-26}
SPLIT_DATA=${SPLIT_DATA:-/tmp/mixdown-vocalsplit}
SPLIT_NTRAIN=${SPLIT_NTRAIN:-260}
SPLIT_MIN=${SPLIT_MIN:-105}
SPLIT2_MIN=${SPLIT2_MIN:-95}
SPLIT3_MIN=${SPLIT3_MIN:-70}
SPLIT3_STOP=${SPLIT3_STOP:-30}
SPLIT4_MIN=${SPLIT4_MIN:-30}
SPLIT5_MIN=${SPLIT5_MIN:-45}
SPLIT6_MIN=${SPLIT6_MIN:-45}
SPLIT7_MIN=${SPLIT7_MIN:-30}
SPLIT8_MIN=${SPLIT8_MIN:-60}
STEMSFT_MIN=${STEMSFT_MIN:-35}
VOCALSFT_MIN=${VOCALSFT_MIN:-35}
# held-out sets: in domain (valid; valid-wide and valid-matched for the widened material) and made only of material
# held out of training
HELDOUT="valid valid-wide valid-matched ood ood-voices ood-instruments"
mkdir -p "$DATA" "$WORK" "$MODELS"
vocalsplit() {
    # the whole vocal -> lead / harmony / reverb (run by the worker after the vocal/backing split),
    # from the vocals network $1
    [ -f "$SPLIT_DATA/valid/meta.jsonl" ] || $PY "$HERE/make_vocalsplit.py" --split valid --count 40 --seconds 10 --out "$SPLIT_DATA/valid"
    [ -f "$SPLIT_DATA/train/meta.jsonl" ] || $PY "$HERE/make_vocalsplit.py" --split train --count "$SPLIT_NTRAIN" --seconds 12 --out "$SPLIT_DATA/train"
    # one cosine cycle from the vocals network's weights (its layers know a voice; the output layers
    # and the refinement block's last layer start fresh, the fused BatchNorms stay frozen)
    local split_args=(--mode vocalsplit --refine --batch 4 --ema 0.995 --export-every 15
        --data "$SPLIT_DATA/train" --valid "$SPLIT_DATA/valid" --workdir "$WORK" --models-dir "$MODELS")
    $PY "$HERE/train.py" "${split_args[@]}" --split-weights 0.5,1.5,1.5 --init-onnx "$1" --minutes "$SPLIT_MIN" --lr 6e-4
    cp "$WORK/vocalsplit.pt" "$WORK/vocalsplit_cycle1.pt"
    # a second cycle with the cross-channel terms added (zero-initialised, so it starts from the first
    # cycle's function): each output channel may also take the other input channel, which lets the
    # network cancel a panned dry voice against the decorrelated stereo reverb; reverb weighted more.
    # It and the cycles after it start from the cycle before (its checkpoint; BatchNorms frozen)
    local warm_args=(--split-weights 0.5,1.5,2 --cross --freeze-bn --lr 3e-4)
    $PY "$HERE/train.py" "${split_args[@]}" "${warm_args[@]}" --init "$WORK/vocalsplit_cycle1.pt" --minutes "$SPLIT2_MIN"
    cp "$WORK/vocalsplit.pt" "$WORK/vocalsplit_cycle2.pt"
    # a third, with the inter-channel phase added to the input features (cos and sin of the phase
    # difference per bin: an amplitude-panned voice is in phase between the channels, the reverb is
    # not), stopped at SPLIT3_STOP of its SPLIT3_MIN-minute cosine
    $PY "$HERE/train.py" "${split_args[@]}" "${warm_args[@]}" --ipd --init "$WORK/vocalsplit_cycle2.pt" \
        --minutes "$SPLIT3_MIN" --stop-at "$SPLIT3_STOP"
    cp "$WORK/vocalsplit.pt" "$WORK/vocalsplit_cycle3.pt"
    # a fourth, with the echo features added (an echo mask proposed from the delay at which the onsets
    # repeat, at the input and straight to the reverb's mask logits)
    $PY "$HERE/train.py" "${split_args[@]}" "${warm_args[@]}" --ipd --echo --init "$WORK/vocalsplit_cycle3.pt" \
        --minutes "$SPLIT4_MIN"
    cp "$WORK/vocalsplit.pt" "$WORK/vocalsplit_cycle4.pt"
    # four warm restarts, each from the cycle before: the reverb weighted more in the first two (2.5, then 3: a
    # later --split-weights overrides warm_args'), the last three with other orders of examples (--seed); each kept
    # as vocalsplit_cycleN.pt but the last, which is the network itself
    local i=5 restart reverb_w seed minutes
    for restart in "2.5 0 $SPLIT5_MIN" "3 1 $SPLIT6_MIN" "3 2 $SPLIT7_MIN" "3 3 $SPLIT8_MIN"; do
        read -r reverb_w seed minutes <<<"$restart"
        $PY "$HERE/train.py" "${split_args[@]}" "${warm_args[@]}" --ipd --echo --split-weights "0.5,1.5,$reverb_w" \
            --seed "$seed" --init "$WORK/vocalsplit_cycle$((i - 1)).pt" --minutes "$minutes"
        if [ "$i" -lt 8 ]; then cp "$WORK/vocalsplit.pt" "$WORK/vocalsplit_cycle$i.pt"; fi
        i=$((i + 1))
    done
    $PY "$HERE/evaluate.py" --ckpt "$WORK/vocalsplit.pt" --name vocalsplit --oracle --valid "$SPLIT_DATA/valid" --json "$WORK/eval_vocalsplit.json"
    # and on 200 held-out clips (the 40's seeds and 160 more): a 40-clip median moves by ~0.2 dB between sets
    [ -f "$SPLIT_DATA/valid200/meta.jsonl" ] || $PY "$HERE/make_vocalsplit.py" --split valid --count 200 --seconds 10 --out "$SPLIT_DATA/valid200"
    $PY "$HERE/evaluate.py" --ckpt "$WORK/vocalsplit.pt" --name vocalsplit --oracle --valid "$SPLIT_DATA/valid200" --json "$WORK/eval_vocalsplit_200.json"
}
dataset() {
    # make_dataset.py's split $1 in $DATA/$1, $2 clips of $3 s, unless it holds that many already
    if [ -f "$DATA/$1/meta.jsonl" ] && [ "$(wc -l <"$DATA/$1/meta.jsonl")" -ge "$2" ]; then return; fi
    $PY "$HERE/make_dataset.py" --split "$1" --count "$2" --seconds "$3" --out "$DATA/$1"
}
trainset() {
    # a training split $1 of 12 s clips: NTRAIN of `train` (widened), NFORM of `train-formants`, NSYN of `train-synthetic`
    local n=$NSYN
    if [ "$1" = train ]; then n=$NTRAIN; fi
    if [ "$1" = train-formants ]; then n=$NFORM; fi
    dataset "$1" "$n" 12
}
heldout_sets() {
    for s in $HELDOUT; do dataset "$s" 40 10; done
}
evaluate_all() {
    # the networks trained in $WORK (stems.pt, vocals.pt, whichever this run made) on every held-out set
    local n s
    for n in stems vocals; do
        [ -f "$WORK/$n.pt" ] || continue
        for s in $HELDOUT; do
            $PY "$HERE/evaluate.py" --ckpt "$WORK/$n.pt" --name $n --valid "$DATA/$s" --json "$WORK/eval_${n}_$s.json"
        done
        cp "$WORK/eval_${n}_valid.json" "$WORK/eval_$n.json"
    done
}
vocals_formants() {
    # the vocals network fine-tuned from its ONNX export $1 (the export fused the BatchNorms, so they stay frozen) on
    # Festival voices given other formants, new speakers from recorded ones (train-formants), and the synthetic material
    trainset train-formants
    trainset train-synthetic
    $PY "$HERE/train.py" --mode vocals --refine --init-onnx "$1" --minutes "$VOCALSFT_MIN" --export-every 10 --lr 2e-4 \
        --data "$DATA/train-formants,$DATA/train-synthetic" --valid "$DATA/valid" --workdir "$WORK" --models-dir "$MODELS"
}
if [ "${ONLY:-}" = vocalsplit ]; then vocalsplit "$FROM/vocals.onnx"; echo BUILD DONE; exit 0; fi
heldout_sets
if [ "${ONLY:-}" = widen ]; then
    trainset train
    trainset train-synthetic
    # the committed networks (their BatchNorms fused by the export, so frozen here) fine-tuned on the widened
    # data: the stems net on train alone, the vocals net on train + train-synthetic (the old material kept
    # in, so that the in-domain figures hold)
    $PY "$HERE/train.py" --mode stems --refine --init-onnx "$FROM/stems.onnx" --minutes "$STEMSFT_MIN" --export-every 10 --lr 3e-4 \
        --data "$DATA/train" --valid "$DATA/valid" --workdir "$WORK" --models-dir "$MODELS"
    $PY "$HERE/train.py" --mode vocals --refine --init-onnx "$FROM/vocals.onnx" --minutes "$VOCALSFT_MIN" --export-every 10 --lr 2e-4 \
        --data "$DATA/train,$DATA/train-synthetic" --valid "$DATA/valid" --workdir "$WORK" --models-dir "$MODELS"
    evaluate_all
    echo BUILD DONE
    exit 0
fi
if [ "${ONLY:-}" = formants ]; then
    vocals_formants "$FROM/vocals.onnx"
    evaluate_all
    echo BUILD DONE
    exit 0
fi
TRAIN=""
for s in ${SEP_TRAIN//,/ }; do
    trainset "$s"
    TRAIN="$TRAIN${TRAIN:+,}$DATA/$s"
done
# 1) 4-stem network (also exports an interim vocals.onnx from its vocals output),
#    three cosine cycles: from scratch, a warm restart from its checkpoint, and a
#    third with the full-resolution refinement block added (zero-initialised)
$PY "$HERE/train.py" --mode stems --minutes "$STEMS1_MIN" --export-every 8 \
    --data "$TRAIN" --valid "$DATA/valid" --workdir "$WORK" --models-dir "$MODELS"
cp "$WORK/stems.pt" "$WORK/stems_phase1.pt"
$PY "$HERE/train.py" --mode stems --init "$WORK/stems_phase1.pt" --minutes "$STEMS2_MIN" --export-every 8 --seed 1 \
    --data "$TRAIN" --valid "$DATA/valid" --workdir "$WORK" --models-dir "$MODELS"
cp "$WORK/stems.pt" "$WORK/stems_phase2.pt"
$PY "$HERE/train.py" --mode stems --refine --init "$WORK/stems_phase2.pt" --minutes "$STEMS3_MIN" --export-every 8 --seed 2 --lr 6e-4 \
    --data "$TRAIN" --valid "$DATA/valid" --workdir "$WORK" --models-dir "$MODELS"
# 2) vocals/backing network, fine-tuned from the stems network
$PY "$HERE/train.py" --mode vocals --refine --init "$WORK/stems.pt" --minutes "$VOCALS_MIN" --export-every 8 --lr 4e-4 \
    --data "$TRAIN" --valid "$DATA/valid" --workdir "$WORK" --models-dir "$MODELS"
# 3) the vocals network fine-tuned on new speakers made from recorded voices (kept: vocals_base.*, which the
#    vocal split starts from)
cp "$WORK/vocals.pt" "$WORK/vocals_base.pt"
cp "$MODELS/vocals.onnx" "$WORK/vocals_base.onnx"
vocals_formants "$WORK/vocals_base.onnx"
# 4) final held-out evaluation (engine chunking, 50% Hann overlap), in domain and out of domain
evaluate_all
if [ "${ONLY:-}" = separation ]; then echo BUILD DONE; exit 0; fi
vocalsplit "$WORK/vocals_base.onnx"
$PY "$HERE/make_card.py" --data "$DATA" --work "$WORK" --models "$MODELS" --split-data "$SPLIT_DATA" --train "$SEP_TRAIN"
echo BUILD DONE
