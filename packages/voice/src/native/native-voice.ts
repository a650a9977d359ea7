import { ort } from "@mixdown/separation/ort";
import { cpuArenaEnabled } from "@mixdown/separation/allocator";
import { streamStft } from "../dsp/stft-stream.ts";
import type { ConversionControls, MonoSource, VoiceEngine } from "../voice-engine.ts";
import { EnvelopeAnalyzer } from "./analysis.ts";
import { measureVoiceStatsOf } from "./measure.ts";
import { dbToNepers, NATIVE_LAYOUT } from "./layout.ts";

/** Loudness is followed over about this long, so syllables keep their own shape. */
const LEVEL_SMOOTHING_SECONDS = 0.1;
/** Pauses are lifted at most this much toward the model's level (modelVolumeMix 1). */
const MAX_PAUSE_LIFT_DB = 15;

/**
 * A native voice model: the input's STFT magnitudes are reshaped toward the target voice by the
 * per-bin gains the ONNX graph computes from the input's envelope; phase is kept, so the melody
 * and timing are the input's. Two passes: the input's own statistics first, then the conversion.
 */
export class NativeVoiceEngine implements VoiceEngine {
  readonly architecture = "native" as const;
  readonly sampleRate = NATIVE_LAYOUT.sampleRate;

  private constructor(private readonly session: ort.InferenceSession) {}

  static async load(path: string, options: ort.InferenceSession.SessionOptions = {}): Promise<NativeVoiceEngine> {
    return new NativeVoiceEngine(
      await ort.InferenceSession.create(path, {
        graphOptimizationLevel: "all",
        enableCpuMemArena: cpuArenaEnabled(),
        ...options,
      }),
    );
  }

  async *convert(source: MonoSource, controls: ConversionControls): AsyncGenerator<Float32Array> {
    const stats = await measureVoiceStatsOf(source());
    const analyzer = new EnvelopeAnalyzer();
    const { bands, hop, sampleRate } = { ...NATIVE_LAYOUT };
    const alpha = Math.exp(-hop / (sampleRate * LEVEL_SMOOTHING_SECONDS));
    const floor = stats.level - dbToNepers(MAX_PAUSE_LIFT_DB);
    let smoothed = Math.exp(stats.level);
    const fixed = {
      source_mean: new ort.Tensor("float32", stats.mean, [1, bands]),
      source_std: new ort.Tensor("float32", stats.std, [1, bands]),
      strength: new ort.Tensor("float32", Float32Array.of(controls.conversionStrength), [1]),
      volume_mix: new ort.Tensor("float32", Float32Array.of(controls.modelVolumeMix), [1]),
    };
    yield* streamStft(source(), {
      nFft: NATIVE_LAYOUT.nFft,
      hop,
      process: async (batch) => {
        const { count, bins, re, im } = batch;
        const envelope = new Float32Array(count * bands);
        const level = new Float32Array(count);
        analyzer.analyze(batch, envelope, level);
        const frameLevel = new Float32Array(count);
        for (let f = 0; f < count; f++) {
          smoothed = alpha * smoothed + (1 - alpha) * Math.exp(level[f]!);
          frameLevel[f] = Math.max(Math.log(smoothed), floor);
        }
        const out = await this.session.run({
          ...fixed,
          envelope: new ort.Tensor("float32", envelope, [1, count, bands]),
          frame_level: new ort.Tensor("float32", frameLevel, [1, count, 1]),
        });
        const gain = out.gain!.data as Float32Array;
        const levelGain = out.level_gain!.data as Float32Array;
        for (let f = 0; f < count; f++) {
          let before = 0;
          let after = 0;
          for (let k = 0; k < bins; k++) {
            const i = f * bins + k;
            const p = re[i]! ** 2 + im[i]! ** 2;
            before += p;
            after += p * gain[i]! ** 2;
          }
          // The envelope mapping reshapes timbre only: each frame keeps its power, and loudness
          // moves toward the model's only through level_gain (modelVolumeMix).
          const scale = (after > 0 ? Math.sqrt(before / after) : 1) * levelGain[f]!;
          for (let k = 0; k < bins; k++) {
            const i = f * bins + k;
            const g = gain[i]! * scale;
            re[i] = re[i]! * g;
            im[i] = im[i]! * g;
          }
        }
      },
    });
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}
