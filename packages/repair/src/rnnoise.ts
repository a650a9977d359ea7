/// <reference path="./rnnoise-wasm.d.ts" />
import createRnnoiseModule, { type RnnoiseModule } from "@echogarden/rnnoise-wasm";

/** RNNoise's frame: 10 ms at 48 kHz, the only rate and size its model runs at. */
export const RNNOISE_FRAME = 480;
export const RNNOISE_RATE = 48_000;
/**
 * What RNNoise calls a sample: a float on the scale of 16-bit PCM (its demo feeds `short`s as
 * floats). Mixdown's samples are on [-1, 1): scaled by 2^15 in and out, exactly (a power of two).
 */
export const RNNOISE_SCALE = 32_768;
/** The package whose WebAssembly build of RNNoise runs (`@echogarden/rnnoise-wasm`, BSD-3-Clause). */
export const RNNOISE_BUILD = "@echogarden/rnnoise-wasm 0.2.0 (RNNoise 2018 model, rnn_data.c)";

let loading: Promise<RnnoiseModule> | undefined;

/**
 * One channel's RNNoise state (`DenoiseState`): frames go through in order, each 480 samples on the
 * 16-bit scale, and come back denoised one frame late (the first frame out is the algorithm's
 * delay, which the reference demo drops). Free it with `destroy`.
 */
export class RnnoiseChannel {
  readonly #module: RnnoiseModule;
  readonly #state: number;
  readonly #buffer: number;
  #destroyed = false;

  private constructor(module: RnnoiseModule) {
    this.#module = module;
    if (module._rnnoise_get_frame_size() !== RNNOISE_FRAME)
      throw new Error(`the RNNoise build runs ${module._rnnoise_get_frame_size()}-sample frames, not ${RNNOISE_FRAME}`);
    this.#state = module._rnnoise_create(0);
    this.#buffer = module._malloc(RNNOISE_FRAME * 4);
  }

  /** A fresh state (the WebAssembly module is compiled once per thread, on the first call). */
  static async create(): Promise<RnnoiseChannel> {
    loading ??= createRnnoiseModule();
    return new RnnoiseChannel(await loading);
  }

  /**
   * Denoises one frame in place (`frame`: 480 samples on the 16-bit scale, as RNNoise's demo
   * passes them) and returns its voice activity probability.
   */
  process(frame: Float32Array): number {
    if (this.#destroyed) throw new Error("the RNNoise state was destroyed");
    if (frame.length !== RNNOISE_FRAME) throw new RangeError(`an RNNoise frame is ${RNNOISE_FRAME} samples, not ${frame.length}`);
    // the heap's view is taken anew each call: a memory growth replaces its buffer
    const heap = new Float32Array(this.#module.HEAPF32.buffer, this.#buffer, RNNOISE_FRAME);
    heap.set(frame);
    const vad = this.#module._rnnoise_process_frame(this.#state, this.#buffer, this.#buffer);
    frame.set(new Float32Array(this.#module.HEAPF32.buffer, this.#buffer, RNNOISE_FRAME));
    return vad;
  }

  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    this.#module._free(this.#buffer);
    this.#module._rnnoise_destroy(this.#state);
  }
}
