import { streamStft } from "../dsp/stft-stream.ts";
import { VoiceStatsAccumulator, type VoiceStats } from "./analysis.ts";
import { NATIVE_LAYOUT } from "./layout.ts";

/** A recording's envelope statistics, in one streaming STFT pass (no onnxruntime needed). */
export async function measureVoiceStatsOf(source: AsyncIterable<Float32Array>): Promise<VoiceStats> {
  const stats = new VoiceStatsAccumulator();
  for await (const _ of streamStft(source, {
    nFft: NATIVE_LAYOUT.nFft,
    hop: NATIVE_LAYOUT.hop,
    synthesize: false,
    process: (b) => stats.add(b),
  })) {
    // analysis only
  }
  return stats.finish();
}
