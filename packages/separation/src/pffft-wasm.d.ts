// Types for the parts of @echogarden/pffft-wasm (an Emscripten build of PFFFT) used here.
declare module "@echogarden/pffft-wasm/simd" {
  import type { PffftModuleFactory } from "@echogarden/pffft-wasm";
  const factory: PffftModuleFactory;
  export default factory;
}

declare module "@echogarden/pffft-wasm" {
  export interface PffftModule {
    HEAPF32: Float32Array;
    _pffft_new_setup(size: number, transform: 0 | 1): number;
    _pffft_destroy_setup(setup: number): void;
    _pffft_transform_ordered(setup: number, input: number, output: number, work: number, direction: 0 | 1): void;
    _pffft_aligned_malloc(bytes: number): number;
    _pffft_aligned_free(pointer: number): void;
  }
  export type PffftModuleFactory = (options?: object) => Promise<PffftModule>;
  const factory: PffftModuleFactory;
  export default factory;
}
