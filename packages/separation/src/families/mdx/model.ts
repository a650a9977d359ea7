import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { ModelLoadError, openSession, type ExecutionProvider, type InferenceOptions } from "../../inference-options.ts";
import type { RunnableSession } from "../../inference-session.ts";
import type { FamilyModel, FamilyStreamOptions, SeparatedBlock } from "../family.ts";
import { HelperThreadStft } from "./helper-thread-stft.ts";
import { parseMdxManifest, type MdxManifest } from "./manifest.ts";
import { separateMdxStream } from "./separate.ts";

/**
 * One MDX-Net model: its manifest and an onnxruntime session, created once and
 * reused for every chunk and every job.
 */
export class MdxModel implements FamilyModel<MdxManifest> {
  readonly manifest: MdxManifest;
  readonly onnxPath: string;
  readonly inputName: string;
  readonly outputName: string;
  /** largest batch the graph accepts (1 when the batch dimension is fixed) */
  readonly maxBatch: number;
  /** the provider this model's session runs on */
  readonly executionProvider: ExecutionProvider;
  /** set when the configured provider could not run it and it fell back to cpu */
  fallbackReason?: string;
  readonly #session: RunnableSession;
  readonly #specSize: number;

  private constructor(manifest: MdxManifest, onnxPath: string, session: RunnableSession, executionProvider: ExecutionProvider) {
    this.manifest = manifest;
    this.executionProvider = executionProvider;
    this.onnxPath = onnxPath;
    this.#session = session;
    this.#specSize = 4 * manifest.dimF * manifest.dimT;
    // MDX-Net exports name them input/output; others are taken in order
    this.inputName = session.inputNames.includes("input") ? "input" : session.inputNames[0];
    this.outputName = session.outputNames.includes("output") ? "output" : session.outputNames[0];
    const input = session.inputMetadata.find((m) => m.name === this.inputName);
    const inputShape = input?.isTensor ? input.shape : undefined;
    let maxBatch = Number.MAX_SAFE_INTEGER;
    if (inputShape) {
      const expected = [manifest.dimF, manifest.dimT];
      if (inputShape.length !== 4)
        throw new ModelLoadError(
          `${onnxPath}: input "${this.inputName}" has rank ${inputShape.length}, expected [batch, 4, dimF, dimT]`,
        );
      const [batch, channels, f, t] = inputShape;
      if (
        (typeof channels === "number" && channels !== 4) ||
        (typeof f === "number" && f !== expected[0]) ||
        (typeof t === "number" && t !== expected[1])
      ) {
        throw new ModelLoadError(
          `${onnxPath}: input shape [${inputShape.join(", ")}] does not match the manifest [batch, 4, ${manifest.dimF}, ${manifest.dimT}]`,
        );
      }
      if (typeof batch === "number" && batch > 0) maxBatch = batch;
    }
    if (input?.isTensor && input.type !== "float32")
      throw new ModelLoadError(`${onnxPath}: input type ${input.type} is not supported (float32 only)`);
    const output = session.outputMetadata.find((m) => m.name === this.outputName);
    if (output?.isTensor) {
      const rank = output.shape.length;
      const stems = manifest.stems.length;
      if (rank === 5 && typeof output.shape[1] === "number" && output.shape[1] !== stems) {
        throw new ModelLoadError(`${onnxPath}: output has ${output.shape[1]} stems, the manifest lists ${stems}`);
      }
      if (rank === 4 && stems !== 1)
        throw new ModelLoadError(`${onnxPath}: rank-4 output holds one stem, the manifest lists ${stems}`);
      if (rank !== 4 && rank !== 5 && rank !== 0) throw new ModelLoadError(`${onnxPath}: output rank ${rank}, expected 4 or 5`);
    }
    this.maxBatch = maxBatch;
  }

  /** Loads `<manifest>.json` and the ONNX file it names. */
  static async fromManifestFile(manifestPath: string, options: InferenceOptions = {}): Promise<MdxModel> {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(manifestPath, "utf8"));
    } catch (err) {
      throw new ModelLoadError(`${manifestPath}: ${(err as Error).message}`, { cause: err });
    }
    return MdxModel.fromManifest(
      parseMdxManifest(json, manifestPath),
      resolve(dirname(manifestPath), (json as { file: string }).file),
      options,
    );
  }

  static async fromManifest(manifest: MdxManifest, onnxPath: string, options: InferenceOptions = {}): Promise<MdxModel> {
    const session = await openSession(onnxPath, options, manifest.graphOptimization);
    return new MdxModel(manifest, onnxPath, session, options.executionProvider ?? "cpu");
  }

  /**
   * Runs `batch` chunks laid out [batch, 4, dimF, dimT]; returns the stems laid
   * out [batch, S, 4, dimF, dimT] (S = 1 for rank-4 outputs).
   */
  async run(spec: Float32Array, batch: number): Promise<{ data: Float32Array; stems: number }> {
    const { dimF, dimT } = this.manifest;
    if (spec.length !== batch * this.#specSize)
      throw new RangeError(`expected ${batch * this.#specSize} floats, got ${spec.length}`);
    const output = await this.#session.run(this.inputName, spec, [batch, 4, dimF, dimT], this.outputName);
    const dims = output.dims;
    const stems = dims.length === 5 ? dims[1] : 1;
    const valid =
      output.type === "float32" &&
      dims[0] === batch &&
      (dims.length === 4 || dims.length === 5) &&
      dims[dims.length - 3] === 4 &&
      dims[dims.length - 2] === dimF &&
      dims[dims.length - 1] === dimT &&
      stems === this.manifest.stems.length;
    if (!valid) {
      throw new ModelLoadError(
        `${this.onnxPath}: output ${output.type} [${dims.join(", ")}] does not match [${batch}, ${this.manifest.stems.length > 1 ? `${this.manifest.stems.length}, ` : ""}4, ${dimF}, ${dimT}]`,
      );
    }
    return { data: output.data, stems };
  }

  /**
   * One run on a silent chunk: onnxruntime allocates its buffers and picks
   * its kernels on the first run, so a job that follows does not pay for it.
   */
  async warmUp(): Promise<void> {
    await this.run(new Float32Array(this.#specSize), 1);
  }

  /** The session's warm-up and the STFT helper's, for this geometry. */
  async prepare(): Promise<void> {
    await Promise.all([this.warmUp(), HelperThreadStft.warmUp(this.manifest)]);
  }

  separate(input: AsyncIterable<Float32Array>, options: FamilyStreamOptions): AsyncGenerator<SeparatedBlock, void, undefined> {
    return separateMdxStream(input, this, options);
  }

  /** true once run can only fail: released, or its inference thread died */
  get unusable(): boolean {
    return this.#session.unusable;
  }

  async release(): Promise<void> {
    await this.#session.release();
  }
}
