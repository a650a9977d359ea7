import type { ConversionParams } from "./conversion-params.ts";

/** The conversion controls every architecture honours (declared in conversion-params.ts). */
export type ConversionControls = Pick<ConversionParams, "conversionStrength" | "modelVolumeMix" | "pitchShift">;

/** Mono float32 blocks at the engine's rate; called once per pass the engine needs. */
export type MonoSource = () => AsyncIterable<Float32Array>;

/** One loaded voice model behind the interface the pipeline uses, whatever its architecture. */
export interface VoiceEngine {
  readonly architecture: "native" | "rvc";
  /** Rate the engine reads its input at. */
  readonly sampleRate: number;
  /** Rate of the blocks `convert` yields (RVC models output 40 or 48 kHz). */
  readonly outputSampleRate?: number;
  /** true: the engine moves f0 by `pitchShift` itself; otherwise the pipeline shifts the input. */
  readonly shiftsPitch?: boolean;
  convert(source: MonoSource, controls: ConversionControls): AsyncIterable<Float32Array>;
  close(): Promise<void>;
}
