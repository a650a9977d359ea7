import { ort } from "@mixdown/separation/ort";
import { FeatureIndex, RVC_NEIGHBOURS } from "./feature-index.ts";

/**
 * RVC's index retrieval for the engine: the coarse step (every frame against every centroid) as
 * one onnxruntime matrix product per piece, the fine step (the probed lists) in TypeScript.
 */
export class IndexRetrieval {
  private constructor(
    readonly index: FeatureIndex,
    private readonly probe: ort.InferenceSession,
  ) {}

  static async load(path: string, sessionOptions: ort.InferenceSession.SessionOptions = {}): Promise<IndexRetrieval> {
    const index = await FeatureIndex.load(path);
    try {
      return new IndexRetrieval(index, await ort.InferenceSession.create(index.probeGraph(), sessionOptions));
    } catch (err) {
      await index.close();
      throw err;
    }
  }

  /** Lists to search per frame of `features` ([frames × dim]). */
  async probes(features: Float32Array): Promise<Int32Array> {
    const frames = features.length / this.index.dim;
    const out = await this.probe.run({ features: new ort.Tensor("float32", features, [frames, this.index.dim]) });
    return Int32Array.from(out.lists!.data as BigInt64Array, Number);
  }

  /** RVC's blend of `features` with their retrieved neighbours at `rate` (the index rate). */
  async blend(features: Float32Array, rate: number): Promise<Float32Array> {
    if (rate === 0) return features;
    return this.index.blend(features, rate, RVC_NEIGHBOURS, await this.probes(features));
  }

  async close(): Promise<void> {
    await Promise.all([this.probe.release(), this.index.close()]);
  }
}
