import { bandToBinMatrix, melFilterbank } from "../dsp/mel.ts";
import { OnnxGraph } from "../onnx-graph.ts";
import { dbToNepers, NATIVE_BINS, NATIVE_LAYOUT } from "./layout.ts";

export interface NativeVoiceWeights {
  /** Mean log-mel energy per band over the voice's active frames, level-normalised. */
  targetMean: Float32Array;
  /** Standard deviation of the same. */
  targetStd: Float32Array;
  /** Mean log power of the voice's active frames. */
  targetLevel: number;
}

/**
 * Writes a native voice model: log-mel envelope frames of the input in, per-bin spectral gains
 * and per-frame loudness gains out.
 *
 *   mapped  = target_mean + (envelope - source_mean) · clip(target_std / source_std)
 *   gain    = exp(½ · clip((mapped - envelope) · strength) @ band_to_bin)
 *   level_gain = exp(½ · clip((target_level - frame_level) · volume_mix))
 *
 * `strength` 0 gives unit gains (the input's own character); 1 moves every band's statistics to
 * the target voice's. The gains are applied to the input's STFT magnitude, phase kept.
 */
export function writeNativeVoiceModel(weights: NativeVoiceWeights, info: { slug: string; title: string }): Uint8Array {
  const { bands, nFft, sampleRate, fMin, fMax, hop } = NATIVE_LAYOUT;
  const g = new OnnxGraph();
  const envelope = g.input("envelope", [1, "frames", bands]);
  const sourceMean = g.input("source_mean", [1, bands]);
  const sourceStd = g.input("source_std", [1, bands]);
  const strength = g.input("strength", [1]);
  const frameLevel = g.input("frame_level", [1, "frames", 1]);
  const volumeMix = g.input("volume_mix", [1]);

  const targetMean = g.float(weights.targetMean, [bands], "target_mean");
  const targetStd = g.float(weights.targetStd, [bands], "target_std");
  const targetLevel = g.float([weights.targetLevel], [1], "target_level");
  const bandToBin = g.float(
    bandToBinMatrix(melFilterbank(sampleRate, nFft, bands, fMin, fMax)),
    [bands, NATIVE_BINS],
    "band_to_bin",
  );
  const half = g.float([0.5], [], "half");
  const scalar = (v: number, name: string) => g.float([v], [], name);

  const ratio = g.node("Clip", [g.node("Div", [targetStd, sourceStd]), scalar(0.5, "ratio_min"), scalar(1.5, "ratio_max")]);
  const mapped = g.node("Add", [targetMean, g.node("Mul", [g.node("Sub", [envelope, sourceMean]), ratio])]);
  const delta = g.node("Mul", [g.node("Sub", [mapped, envelope]), strength]);
  const limit = dbToNepers(30);
  const clipped = g.node("Clip", [delta, scalar(-limit, "gain_min"), scalar(limit, "gain_max")]);
  const binLog = g.node("MatMul", [clipped, bandToBin]);
  g.node("Exp", [g.node("Mul", [binLog, half])], {}, "gain");
  g.output("gain", [1, "frames", NATIVE_BINS]);

  const levelDelta = g.node("Mul", [g.node("Sub", [targetLevel, frameLevel]), volumeMix]);
  const levelLimit = dbToNepers(30);
  const levelClipped = g.node("Clip", [levelDelta, scalar(-levelLimit, "level_min"), scalar(levelLimit, "level_max")]);
  g.node("Exp", [g.node("Mul", [levelClipped, half])], {}, "level_gain");
  g.output("level_gain", [1, "frames", 1]);

  return g.encode({
    "mixdown.architecture": "native",
    "mixdown.sample_rate": String(sampleRate),
    "mixdown.n_fft": String(nFft),
    "mixdown.hop": String(hop),
    "mixdown.bands": String(bands),
    "mixdown.voice": info.slug,
    "mixdown.title": info.title,
  });
}
