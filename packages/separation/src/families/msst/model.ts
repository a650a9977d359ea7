import { ModelLoadError, openSession, type ExecutionProvider, type InferenceOptions } from "../../inference-options.ts";
import type { RunnableSession } from "../../inference-session.ts";
import { TorchStft } from "../../stft.ts";
import type { FamilyModel, FamilyStreamOptions, SeparatedBlock, SeparationTimings } from "../family.ts";
import { msstDemixStream } from "./demix.ts";
import { msstDerivedStem, type MsstManifest } from "./manifest.ts";

/**
 * A loaded MSST model (BS-RoFormer, Mel-Band RoFormer or MDX23C): its session, and the STFT that
 * turns MSST's chunks into the graph's input and its output back into audio, exactly as the
 * upstream model's forward does around the part that was exported.
 */
export class MsstModel implements FamilyModel<MsstManifest> {
  readonly manifest: MsstManifest;
  readonly onnxPath: string;
  readonly executionProvider: ExecutionProvider;
  fallbackReason?: string;
  /** largest batch the graph accepts (1 when the batch dimension is fixed) */
  readonly maxBatch: number;
  readonly #session: RunnableSession;
  readonly #stft: TorchStft;
  readonly #frames: number;
  readonly #inputName: string;
  readonly #outputName: string;
  /** the graph's input shape after the batch */
  readonly #inputDims: number[];

  private constructor(
    manifest: MsstManifest,
    onnxPath: string,
    session: RunnableSession,
    provider: ExecutionProvider,
    stft: TorchStft,
  ) {
    this.manifest = manifest;
    this.onnxPath = onnxPath;
    this.executionProvider = provider;
    this.#session = session;
    this.#stft = stft;
    this.#frames = stft.framesFor(manifest.chunkSize);
    this.#inputName = session.inputNames.includes("spec") ? "spec" : session.inputNames[0];
    this.#outputName = session.outputNames[0];
    this.#inputDims = manifest.architecture === "mdx23c" ? [4, manifest.dimF, this.#frames] : [2, stft.bins, this.#frames, 2];
    let maxBatch = Number.MAX_SAFE_INTEGER;
    const input = session.inputMetadata.find((m) => m.name === this.#inputName);
    if (input?.isTensor) {
      const [batch, ...rest] = input.shape;
      const fits =
        rest.length === this.#inputDims.length && rest.every((d, i) => typeof d !== "number" || d === this.#inputDims[i]);
      if (!fits)
        throw new ModelLoadError(
          `${onnxPath}: input shape [${input.shape.join(", ")}] does not match the manifest's [batch, ${this.#inputDims.join(", ")}] (${manifest.architecture}, chunkSize ${manifest.chunkSize}, nFft ${manifest.nFft}, hopLength ${manifest.hopLength})`,
        );
      if (typeof batch === "number" && batch > 0) maxBatch = batch;
    }
    this.maxBatch = maxBatch;
  }

  static async fromManifest(manifest: MsstManifest, onnxPath: string, options: InferenceOptions = {}): Promise<MsstModel> {
    const stft = await TorchStft.create({
      nFft: manifest.nFft,
      hop: manifest.hopLength,
      normalized: manifest.architecture === "mdx23c" ? false : manifest.normalized,
      padMode: "reflect",
    });
    const session = await openSession(onnxPath, options);
    try {
      return new MsstModel(manifest, onnxPath, session, options.executionProvider ?? "cpu", stft);
    } catch (err) {
      await session.release();
      throw err;
    }
  }

  /** The model's forward on planar stereo chunks ([2][chunkSize] each): stems out, [stems][2][chunkSize] each. */
  async runChunks(chunks: Float32Array[], timings: SeparationTimings): Promise<Float32Array[]> {
    const { chunkSize } = this.manifest;
    const stft = this.#stft;
    const frames = this.#frames;
    const bins = stft.bins;
    const stems = this.manifest.stems.length;
    const mdx23c = this.manifest.architecture === "mdx23c";
    const dimF = mdx23c ? this.manifest.dimF : bins;
    const perChunk = this.#inputDims.reduce((a, b) => a * b, 1);
    const plane = dimF * frames;
    const results: Float32Array[] = [];
    for (let first = 0; first < chunks.length; first += this.maxBatch) {
      const batch = chunks.slice(first, first + this.maxBatch);
      let t0 = performance.now();
      const feed = new Float32Array(batch.length * perChunk);
      for (let c = 0; c < batch.length; c++) {
        for (let ch = 0; ch < 2; ch++) {
          const spec = stft.forward(batch[c].subarray(ch * chunkSize, (ch + 1) * chunkSize)).data;
          if (!mdx23c) feed.set(spec, (c * 2 + ch) * bins * frames * 2);
          else {
            // MSST's MDX23C packs [L re, L im, R re, R im] × bins × frames, bins cropped to dimF
            const re = (c * 4 + ch * 2) * plane;
            const im = re + plane;
            for (let i = 0; i < plane; i++) {
              feed[re + i] = spec[2 * i];
              feed[im + i] = spec[2 * i + 1];
            }
          }
        }
      }
      timings.postMs += performance.now() - t0;
      t0 = performance.now();
      const outputs = await this.#session.runMany(
        { [this.#inputName]: { data: feed, dims: [batch.length, ...this.#inputDims] } },
        [this.#outputName],
      );
      const elapsed = performance.now() - t0;
      timings.inferenceMs += elapsed;
      timings.waitMs += elapsed;
      const out = outputs[this.#outputName];
      const expected = [batch.length, stems, ...this.#inputDims];
      if (out.type !== "float32" || out.dims.length !== expected.length || out.dims.some((d, i) => d !== expected[i]))
        throw new ModelLoadError(
          `${this.onnxPath}: output ${out.type} [${out.dims.join(", ")}] does not match [${expected.join(", ")}]`,
        );
      t0 = performance.now();
      const spec = new Float32Array(bins * frames * 2);
      for (let c = 0; c < batch.length; c++) {
        const audio = new Float32Array(stems * 2 * chunkSize);
        for (let s = 0; s < stems; s++) {
          for (let ch = 0; ch < 2; ch++) {
            const at = ((c * stems + s) * 2 + ch) * (mdx23c ? 2 * plane : bins * frames * 2);
            if (!mdx23c) {
              spec.set(out.data.subarray(at, at + bins * frames * 2));
              // zero_dc: MSST's RoFormers zero the DC bin before the iSTFT
              if (this.manifest.zeroDc) for (let t = 0; t < frames; t++) spec[2 * t] = spec[2 * t + 1] = 0;
            } else {
              spec.fill(0, plane * 2);
              for (let i = 0; i < plane; i++) {
                spec[2 * i] = out.data[at + i];
                spec[2 * i + 1] = out.data[at + plane + i];
              }
            }
            audio.set(stft.inverse(spec, frames, chunkSize), (s * 2 + ch) * chunkSize);
          }
        }
        results.push(audio);
      }
      timings.postMs += performance.now() - t0;
    }
    return results;
  }

  async prepare(): Promise<void> {
    const timings = { inferenceMs: 0, waitMs: 0, postMs: 0, chunks: 0, batches: 0 };
    await this.runChunks([new Float32Array(2 * this.manifest.chunkSize)], timings);
  }

  separate(input: AsyncIterable<Float32Array>, options: FamilyStreamOptions): AsyncGenerator<SeparatedBlock, void, undefined> {
    const { chunkSize, numOverlap, batchSize } = this.manifest;
    // the engine's overlap is the share of a chunk the next one covers: 1 − 1/numOverlap
    const overlap = options.overlap === undefined ? numOverlap : Math.max(1, Math.round(1 / (1 - options.overlap)));
    const derived = msstDerivedStem(this.manifest);
    return msstDemixStream(input, (chunks, timings) => this.runChunks(chunks, timings), {
      geometry: { chunkSize, numOverlap: overlap, batchSize },
      runBatch: Math.min(options.batchSize, this.maxBatch),
      stems: this.manifest.stems,
      ...(derived ? { derived } : {}),
      wanted: options.stems,
      timings: options.timings,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  get unusable(): boolean {
    return this.#session.unusable;
  }

  async release(): Promise<void> {
    await this.#session.release();
  }
}
