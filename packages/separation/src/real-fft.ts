/// <reference path="./pffft-wasm.d.ts" />
import type { PffftModule } from "@echogarden/pffft-wasm";
import { ComplexFft } from "./fft.ts";

/**
 * A real FFT of fixed size N working on two buffers: `time` (N samples) and
 * `spectrum` in packed order [re0, re(N/2), re1, im1, re2, im2, ...].
 * Neither direction scales: inverse(forward(x)) = N·x.
 */
export interface RealFft {
  readonly size: number;
  /** `pffft-simd` (WebAssembly SIMD), `pffft` (WebAssembly) or `js` */
  readonly implementation: "pffft-simd" | "pffft" | "js";
  readonly time: Float32Array;
  readonly spectrum: Float32Array;
  /** time → spectrum */
  forward(): void;
  /** spectrum → time; leaves `spectrum` unchanged */
  inverse(): void;
}

/** PFFFT handles N = 2^a·3^b·5^c with a ≥ 5, which covers every MDX-Net n_fft. */
export function pffftSupports(size: number): boolean {
  if (!Number.isInteger(size) || size < 32 || size % 32 !== 0) return false;
  let rest = size;
  for (const p of [2, 3, 5]) while (rest % p === 0) rest /= p;
  return rest === 1;
}

interface PffftRuntime {
  module: PffftModule;
  simd: boolean;
  /** every plan, so views can be renewed when the wasm memory grows */
  plans: PffftRealFft[];
  cache: Map<number, PffftRealFft>;
}

let runtime: Promise<PffftRuntime> | undefined;

function loadPffft(): Promise<PffftRuntime> {
  runtime ??= (async () => {
    try {
      const factory = (await import("@echogarden/pffft-wasm/simd")).default;
      return { module: await factory(), simd: true, plans: [], cache: new Map() };
    } catch {
      const factory = (await import("@echogarden/pffft-wasm")).default;
      return { module: await factory(), simd: false, plans: [], cache: new Map() };
    }
  })();
  return runtime;
}

class PffftRealFft implements RealFft {
  readonly size: number;
  readonly implementation: "pffft-simd" | "pffft";
  time!: Float32Array;
  spectrum!: Float32Array;
  readonly #module: PffftModule;
  readonly #setup: number;
  readonly #timePtr: number;
  readonly #spectrumPtr: number;
  readonly #workPtr: number;

  constructor(rt: PffftRuntime, size: number) {
    this.size = size;
    this.implementation = rt.simd ? "pffft-simd" : "pffft";
    this.#module = rt.module;
    this.#setup = rt.module._pffft_new_setup(size, 0);
    if (!this.#setup) throw new RangeError(`PFFFT cannot transform size ${size}`);
    this.#timePtr = rt.module._pffft_aligned_malloc(4 * size);
    this.#spectrumPtr = rt.module._pffft_aligned_malloc(4 * size);
    this.#workPtr = rt.module._pffft_aligned_malloc(4 * size);
    rt.plans.push(this);
    for (const plan of rt.plans) plan.renewViews();
    this.time.fill(0);
    this.spectrum.fill(0);
  }

  renewViews(): void {
    const heap = this.#module.HEAPF32;
    this.time = heap.subarray(this.#timePtr >> 2, (this.#timePtr >> 2) + this.size);
    this.spectrum = heap.subarray(this.#spectrumPtr >> 2, (this.#spectrumPtr >> 2) + this.size);
  }

  forward(): void {
    this.#module._pffft_transform_ordered(this.#setup, this.#timePtr, this.#spectrumPtr, this.#workPtr, 0);
  }

  inverse(): void {
    this.#module._pffft_transform_ordered(this.#setup, this.#spectrumPtr, this.#timePtr, this.#workPtr, 1);
  }
}

/**
 * The TypeScript fallback for sizes PFFFT cannot do: a complex FFT of half
 * the size over the even/odd samples, split into the real spectrum.
 */
export class JsRealFft implements RealFft {
  readonly size: number;
  readonly implementation = "js" as const;
  readonly time: Float32Array;
  readonly spectrum: Float32Array;
  readonly #fft: ComplexFft;
  readonly #re: Float64Array;
  readonly #im: Float64Array;
  /** e^(−2πik/N) for k < N/2 */
  readonly #twiddleRe: Float64Array;
  readonly #twiddleIm: Float64Array;

  constructor(size: number) {
    if (size < 2 || size % 2 !== 0) throw new RangeError(`real FFT size must be even, got ${size}`);
    this.size = size;
    this.time = new Float32Array(size);
    this.spectrum = new Float32Array(size);
    const half = size / 2;
    this.#fft = new ComplexFft(half);
    this.#re = new Float64Array(half);
    this.#im = new Float64Array(half);
    this.#twiddleRe = new Float64Array(half);
    this.#twiddleIm = new Float64Array(half);
    for (let k = 0; k < half; k++) {
      this.#twiddleRe[k] = Math.cos((-2 * Math.PI * k) / size);
      this.#twiddleIm[k] = Math.sin((-2 * Math.PI * k) / size);
    }
  }

  forward(): void {
    const { time, spectrum } = this;
    const half = this.size / 2;
    const re = this.#re;
    const im = this.#im;
    for (let n = 0; n < half; n++) {
      re[n] = time[2 * n];
      im[n] = time[2 * n + 1];
    }
    this.#fft.forward(re, im);
    // E[k] = (Z[k] + conj Z[M−k]) / 2, O[k] = (Z[k] − conj Z[M−k]) / 2i, X[k] = E[k] + W^k·O[k]
    spectrum[0] = re[0] + im[0];
    spectrum[1] = re[0] - im[0];
    for (let k = 1; k < half; k++) {
      const m = half - k;
      const er = 0.5 * (re[k] + re[m]);
      const ei = 0.5 * (im[k] - im[m]);
      const or = 0.5 * (im[k] + im[m]);
      const oi = -0.5 * (re[k] - re[m]);
      const wr = this.#twiddleRe[k];
      const wi = this.#twiddleIm[k];
      spectrum[2 * k] = er + wr * or - wi * oi;
      spectrum[2 * k + 1] = ei + wr * oi + wi * or;
    }
  }

  inverse(): void {
    const { time, spectrum } = this;
    const half = this.size / 2;
    const re = this.#re;
    const im = this.#im;
    // E[k] = (X[k] + conj X[M−k]) / 2, O[k] = (X[k] − conj X[M−k]) / 2·W^(−k), Z[k] = E[k] + i·O[k]
    for (let k = 0; k < half; k++) {
      const m = half - k;
      const xr = k === 0 ? spectrum[0] : spectrum[2 * k];
      const xi = k === 0 ? 0 : spectrum[2 * k + 1];
      const yr = k === 0 ? spectrum[1] : spectrum[2 * m];
      const yi = k === 0 ? 0 : -spectrum[2 * m + 1];
      const er = 0.5 * (xr + yr);
      const ei = 0.5 * (xi + yi);
      const dr = 0.5 * (xr - yr);
      const di = 0.5 * (xi - yi);
      const wr = this.#twiddleRe[k];
      const wi = -this.#twiddleIm[k];
      const or = dr * wr - di * wi;
      const oi = dr * wi + di * wr;
      re[k] = er - oi;
      im[k] = ei + or;
    }
    this.#fft.inverse(re, im);
    for (let n = 0; n < half; n++) {
      time[2 * n] = re[n] * this.size;
      time[2 * n + 1] = im[n] * this.size;
    }
  }
}

/**
 * The fastest real FFT for `size`: PFFFT in WebAssembly (SIMD when the runtime
 * has it) when it supports the size, else the TypeScript fallback. PFFFT plans
 * are shared per size within a thread; callers use them synchronously, so no
 * two users interleave inside a transform.
 */
export async function createRealFft(size: number, options: { implementation?: "auto" | "js" } = {}): Promise<RealFft> {
  if (options.implementation === "js" || !pffftSupports(size)) return new JsRealFft(size);
  const rt = await loadPffft();
  let plan = rt.cache.get(size);
  if (!plan) {
    plan = new PffftRealFft(rt, size);
    rt.cache.set(size, plan);
  }
  return plan;
}
