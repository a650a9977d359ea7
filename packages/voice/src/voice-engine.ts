/** The conversion controls every architecture honours. */
export interface ConversionControls {
  /** 0 keeps the input's own character, 1 is the full target voice. */
  conversionStrength: number;
  /** 0 keeps the input's loudness envelope, 1 follows the model's. */
  modelVolumeMix: number;
  /** Semitones; engines that take f0 as an input apply it themselves (`shiftsPitch`). */
  pitchShift: number;
}

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
