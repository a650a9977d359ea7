// @echogarden/rnnoise-wasm ships no types: the Emscripten module it builds, as far as Mixdown uses it.
declare module "@echogarden/rnnoise-wasm" {
  export interface RnnoiseModule {
    HEAPF32: Float32Array;
    _malloc(bytes: number): number;
    _free(pointer: number): void;
    _rnnoise_get_frame_size(): number;
    /** `model` 0: the built-in model */
    _rnnoise_create(model: number): number;
    _rnnoise_destroy(state: number): void;
    /** Denoises one frame in place (`out` may be `in`); returns the frame's voice activity probability. */
    _rnnoise_process_frame(state: number, out: number, input: number): number;
  }
  const createRnnoiseModule: (moduleArg?: object) => Promise<RnnoiseModule>;
  export default createRnnoiseModule;
}
