import { concatSamples, decodeToPcm } from "@mixdown/audio";
import { measureVoiceStatsOf } from "./measure.ts";
import { writeNativeVoiceModel } from "./model-graph.ts";
import { NATIVE_LAYOUT } from "./layout.ts";

/** A reference recording no native voice can be built from (not one that failed to decode: that is AudioDecodeError). */
export class ReferenceRecordingError extends Error {
  override readonly name = "ReferenceRecordingError";
}

/** Mono blocks of an audio file at the native models' rate. */
export async function* monoBlocks(
  path: string,
  sampleRate: number = NATIVE_LAYOUT.sampleRate,
  signal?: AbortSignal,
): AsyncGenerator<Float32Array> {
  for await (const block of decodeToPcm(path, { sampleRate, blockFrames: 65536, ...(signal ? { signal } : {}) })) {
    const mono = new Float32Array(block.length / 2);
    for (let i = 0; i < mono.length; i++) mono[i] = (block[2 * i]! + block[2 * i + 1]!) / 2;
    yield mono;
  }
}

/** A whole (short) file decoded to one mono float32 array at `sampleRate`. */
export async function readMono(path: string, sampleRate: number = NATIVE_LAYOUT.sampleRate): Promise<Float32Array> {
  const parts: Float32Array[] = [];
  for await (const b of monoBlocks(path, sampleRate)) parts.push(b);
  return concatSamples(parts, (n) => new Float32Array(n));
}

/**
 * Builds a native voice model from reference recordings of the target voice: the weights are
 * the statistics of its level-normalised log-mel envelope and its loudness over active frames.
 * Needs no onnxruntime (the API can run it).
 */
export async function buildNativeVoiceModel(
  referencePaths: string[],
  info: { slug: string; title: string },
  signal?: AbortSignal,
): Promise<{ onnx: Uint8Array; activeSeconds: number }> {
  async function* all() {
    for (const path of referencePaths) yield* monoBlocks(path, NATIVE_LAYOUT.sampleRate, signal);
  }
  const stats = await measureVoiceStatsOf(all());
  if (stats.activeFrames < 20)
    throw new ReferenceRecordingError(`the reference recording has too little voice (${stats.activeFrames} active frames)`);
  const onnx = writeNativeVoiceModel({ targetMean: stats.mean, targetStd: stats.std, targetLevel: stats.level }, info);
  return { onnx, activeSeconds: (stats.activeFrames * NATIVE_LAYOUT.hop) / NATIVE_LAYOUT.sampleRate };
}
