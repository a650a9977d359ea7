import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { MdxStft, type MdxStftConfig } from "./stft.ts";
import { siblingModule } from "../../sibling-module.ts";
import { ThreadRequests, type DistributiveOmit } from "../../thread-requests.ts";

export type StftHelperRequest =
  | {
      id: number;
      op: "analyze";
      config: MdxStftConfig & { fft: "auto" | "js" };
      left: Float32Array;
      right: Float32Array;
      offset: number;
      spec: Float32Array;
      specOffset: number;
    }
  | {
      id: number;
      op: "synthesize";
      config: MdxStftConfig & { fft: "auto" | "js" };
      spec: Float32Array;
      specOffset: number;
      accLeft: Float32Array;
      accRight: Float32Array;
    };

export interface StftHelperResponse {
  id: number;
  error?: string;
}

/** One helper thread per calling thread, started on first use and kept for later jobs. */
class StftHelper {
  readonly #requests: ThreadRequests<StftHelperResponse, void>;

  constructor() {
    const worker = new Worker(siblingModule("./stft-helper-thread", import.meta.url));
    this.#requests = new ThreadRequests<StftHelperResponse, void>(worker, "STFT helper thread", (response) =>
      response.error
        ? { id: response.id, error: new Error(`STFT helper thread: ${response.error}`) }
        : { id: response.id, result: undefined },
    );
  }

  get broken(): boolean {
    return this.#requests.broken !== undefined;
  }

  request(work: DistributiveOmit<StftHelperRequest, "id">): Promise<void> {
    helperRequests++;
    return this.#requests.request((id) => ({ ...work, id }));
  }
}

let helperRequests = 0;

/** How many STFT requests the helper threads of this thread have been sent (tests check it ran). */
export function stftHelperRequests(): number {
  return helperRequests;
}

let helper: StftHelper | undefined;

function sharedHelper(): StftHelper {
  if (!helper || helper.broken) helper = new StftHelper();
  return helper;
}

function isShared(array: Float32Array): boolean {
  return array.buffer instanceof SharedArrayBuffer;
}

/** A Float32Array on shared memory, which the helper thread can read and write. */
export function sharedFloat32(length: number): Float32Array {
  return new Float32Array(new SharedArrayBuffer(4 * length));
}

export interface HelperThreadStftOptions {
  fft?: "auto" | "js";
  /** do the STFT work on the helper thread (default: when the machine has 2+ cores) */
  helperThread?: boolean;
}

/**
 * MdxStft whose work runs on a helper thread at a lower CPU priority (nice
 * STFT_THREAD_NICE), while the model runs on its own inference thread at
 * normal priority: the STFT fills the moments onnxruntime's threads leave a
 * core idle instead of taking cores from them, and the calling thread stays
 * free for decoding and encoding. Buffers the helper must see are
 * SharedArrayBuffer views; anything else is processed on the calling thread.
 */
export class HelperThreadStft {
  readonly stft: MdxStft;
  readonly #config: MdxStftConfig & { fft: "auto" | "js" };
  readonly #helper: StftHelper | undefined;
  readonly #sharedSpec: Float32Array | undefined;
  readonly #helperLeft: Float32Array | undefined;
  readonly #helperRight: Float32Array | undefined;

  private constructor(stft: MdxStft, config: MdxStftConfig & { fft: "auto" | "js" }, helper: StftHelper | undefined) {
    this.stft = stft;
    this.#config = config;
    this.#helper = helper;
    if (helper) {
      this.#sharedSpec = sharedFloat32(stft.specSize);
      this.#helperLeft = sharedFloat32(stft.keptSize);
      this.#helperRight = sharedFloat32(stft.keptSize);
    }
  }

  static async create(config: MdxStftConfig, options: HelperThreadStftOptions = {}): Promise<HelperThreadStft> {
    const fft = options.fft ?? "auto";
    const stft = await MdxStft.create(config, { fft });
    const wanted = options.helperThread ?? availableParallelism() > 1;
    const geometry = { nFft: config.nFft, hopLength: config.hopLength, dimF: config.dimF, dimT: config.dimT, fft };
    return new HelperThreadStft(stft, geometry, wanted ? sharedHelper() : undefined);
  }

  /**
   * Starts the helper thread and its FFT for this geometry (one silent chunk),
   * so the first job does not pay for it; long-lived workers call it once.
   */
  static async warmUp(config: MdxStftConfig): Promise<void> {
    const stfts = await HelperThreadStft.create(config);
    const input = sharedFloat32(stfts.stft.chunkSize);
    await stfts.analyze(input, input, 0, sharedFloat32(stfts.stft.specSize), 0);
  }

  get usesHelperThread(): boolean {
    return this.#helper !== undefined;
  }

  /** MdxStft.analyze, on the helper thread when the buffers are shared. */
  async analyze(left: Float32Array, right: Float32Array, offset: number, spec: Float32Array, specOffset: number): Promise<void> {
    const helper = this.#helper;
    if (!helper || helper.broken || !isShared(left) || !isShared(right) || !isShared(spec)) {
      this.stft.analyze(left, right, offset, spec, specOffset);
      return;
    }
    await helper.request({ op: "analyze", config: this.#config, left, right, offset, spec, specOffset });
  }

  /** MdxStft.synthesizeAdd, the frames on the helper thread, the final scaling here. */
  async synthesizeAdd(
    spec: Float32Array,
    specOffset: number,
    left: Float32Array,
    right: Float32Array,
    outOffset: number,
    gain?: Float32Array,
  ): Promise<void> {
    const helper = this.#helper;
    if (!helper || helper.broken) {
      this.stft.synthesizeAdd(spec, specOffset, left, right, outOffset, gain);
      return;
    }
    const stft = this.stft;
    let shared = spec;
    let sharedOffset = specOffset;
    if (!isShared(spec)) {
      // onnxruntime's outputs are ordinary buffers: the helper gets a copy
      this.#sharedSpec!.set(spec.subarray(specOffset, specOffset + stft.specSize));
      shared = this.#sharedSpec!;
      sharedOffset = 0;
    }
    const helperLeft = this.#helperLeft!;
    const helperRight = this.#helperRight!;
    await helper.request({
      op: "synthesize",
      config: this.#config,
      spec: shared,
      specOffset: sharedOffset,
      accLeft: helperLeft,
      accRight: helperRight,
    });
    stft.normalizeInto(helperLeft, helperRight, left, right, outOffset, gain);
  }
}
