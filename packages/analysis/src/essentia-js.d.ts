// essentia.js ships no typings for its Node entry point; this is the part Mixdown calls.
declare module "essentia.js" {
  /** An Essentia std::vector<float> living in the WebAssembly heap: delete it when done. */
  export interface EssentiaVector {
    delete(): void;
    size(): number;
  }
  export class Essentia {
    constructor(wasm: unknown);
    readonly version: string;
    arrayToVector(array: Float32Array): EssentiaVector;
    vectorToArray(vector: EssentiaVector): Float32Array;
    KeyExtractor(audio: EssentiaVector): { key: string; scale: string; strength: number };
    RhythmExtractor2013(
      signal: EssentiaVector,
      maxTempo?: number,
      method?: string,
      minTempo?: number,
    ): { bpm: number; ticks: EssentiaVector; confidence: number; estimates: EssentiaVector; bpmIntervals: EssentiaVector };
    LoudnessEBUR128(
      left: EssentiaVector,
      right: EssentiaVector,
      hopSize?: number,
      sampleRate?: number,
      startAtZero?: boolean,
    ): {
      momentaryLoudness: EssentiaVector;
      shortTermLoudness: EssentiaVector;
      integratedLoudness: number;
      loudnessRange: number;
    };
  }
  const essentia: { EssentiaWASM: unknown; Essentia: typeof Essentia };
  export default essentia;
}
