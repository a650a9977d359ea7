import { createRealFft, JsRealFft, type RealFft } from "../../real-fft.ts";

export interface MdxStftConfig {
  nFft: number;
  hopLength: number;
  dimF: number;
  dimT: number;
}

/** Bins below this index are zeroed before the model sees them, as UVR does. */
export const MDX_ZEROED_LOW_BINS = 3;

/** Frames handled together so the [channel, bin, frame] layout is written and read in cache-sized runs. */
const FRAME_BLOCK = 8;

/**
 * The spectrogram convention of MDX-Net models, one chunk of
 * `hopLength·(dimT−1)` stereo samples at a time:
 *
 * - analysis matches `torch.stft(x, nFft, hop, window=hann(nFft, periodic=True),
 *   center=True, pad_mode='reflect')`: exactly `dimT` frames per chunk;
 * - model layout [4, dimF, dimT] with channels [L.re, L.im, R.re, R.im], only
 *   bins 0..dimF−1, and bins 0..2 zeroed;
 * - synthesis matches `torch.istft(..., center=True)` with bins ≥ dimF set to
 *   zero (and the imaginary parts of DC and Nyquist dropped, as irfft does),
 *   but only produces the kept part of the chunk: `nFft/2` samples are trimmed
 *   at each side, so the first and last frame are never synthesised.
 */
export class MdxStft {
  readonly nFft: number;
  readonly hopLength: number;
  readonly dimF: number;
  readonly dimT: number;
  /** samples per chunk: hopLength·(dimT−1) */
  readonly chunkSize: number;
  /** samples dropped at each side of a chunk's output: nFft/2 */
  readonly trim: number;
  /** samples kept per chunk: chunkSize − 2·trim */
  readonly keptSize: number;
  /** floats per chunk in the model layout: 4·dimF·dimT */
  readonly specSize: number;
  readonly fft: RealFft;

  /** window / nFft: the inverse FFT is unscaled */
  readonly #synthesisWindow: Float32Array;
  /** 1 / Σ_t w²(n − t·hop) over the kept region */
  readonly #inverseEnvelope: Float32Array;
  readonly #block: Float32Array;
  readonly #accLeft: Float32Array;
  readonly #accRight: Float32Array;

  /** Picks the fastest FFT for nFft (see createRealFft). */
  static async create(config: MdxStftConfig, options: { fft?: "auto" | "js" } = {}): Promise<MdxStft> {
    validate(config);
    return new MdxStft(config, await createRealFft(config.nFft, { implementation: options.fft ?? "auto" }));
  }

  constructor(config: MdxStftConfig, fft: RealFft = new JsRealFft(config.nFft)) {
    validate(config);
    const { nFft, hopLength, dimF, dimT } = config;
    if (fft.size !== nFft) throw new RangeError(`FFT size ${fft.size} != nFft ${nFft}`);
    this.nFft = nFft;
    this.hopLength = hopLength;
    this.dimF = dimF;
    this.dimT = dimT;
    this.fft = fft;
    this.chunkSize = hopLength * (dimT - 1);
    this.trim = nFft / 2;
    this.keptSize = this.chunkSize - 2 * this.trim;
    this.specSize = 4 * dimF * dimT;

    const window = new Float64Array(nFft);
    for (let n = 0; n < nFft; n++) window[n] = 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / nFft);
    this.#synthesisWindow = Float32Array.from(window, (w) => w / nFft);

    // In padded coordinates (chunk sample s sits at s + nFft/2) the kept region
    // is [nFft, chunkSize); frame t covers [t·hop, t·hop + nFft).
    const envelope = new Float64Array(this.keptSize);
    for (let t = 0; t < dimT; t++) {
      for (let n = 0; n < nFft; n++) {
        const k = t * hopLength + n - nFft;
        if (k >= 0 && k < this.keptSize) envelope[k] += window[n] * window[n];
      }
    }
    this.#inverseEnvelope = new Float32Array(this.keptSize);
    for (let k = 0; k < this.keptSize; k++) {
      if (envelope[k] < 1e-10) throw new RangeError(`window overlap too small to invert (nFft ${nFft}, hop ${hopLength})`);
      this.#inverseEnvelope[k] = 1 / envelope[k];
    }
    this.#block = new Float32Array(4 * dimF * FRAME_BLOCK);
    this.#accLeft = new Float32Array(this.keptSize);
    this.#accRight = new Float32Array(this.keptSize);
  }

  /**
   * Spectrogram of one chunk: `left`/`right` hold `chunkSize` samples from
   * `offset`; writes `specSize` floats into `spec` at `specOffset`.
   */
  analyze(left: Float32Array, right: Float32Array, offset: number, spec: Float32Array, specOffset: number): void {
    const { nFft, hopLength, dimF, dimT, chunkSize } = this;
    const half = nFft / 2;
    const fft = this.fft;
    const time = fft.time;
    const spectrum = fft.spectrum;
    const block = this.#block;
    const last = chunkSize - 1;
    const zeroed = Math.min(MDX_ZEROED_LOW_BINS, dimF);
    const plane = dimF * FRAME_BLOCK;
    for (let t0 = 0; t0 < dimT; t0 += FRAME_BLOCK) {
      const frames = Math.min(FRAME_BLOCK, dimT - t0);
      for (let j = 0; j < frames; j++) {
        const start = (t0 + j) * hopLength - half;
        for (let channel = 0; channel < 2; channel++) {
          const x = channel === 0 ? left : right;
          if (start >= 0 && start + nFft <= chunkSize) {
            time.set(x.subarray(offset + start, offset + start + nFft));
          } else {
            for (let n = 0; n < nFft; n++) {
              // reflect padding without repeating the edge sample, like torch
              let i = start + n;
              if (i < 0) i = -i;
              else if (i > last) i = 2 * last - i;
              time[n] = x[offset + i];
            }
          }
          fft.forward();
          // The periodic Hann window is applied in the frequency domain, where
          // it is the 3-tap kernel X[k]/2 − (X[k−1] + X[k+1])/4: exact, and only
          // dimF bins to touch instead of nFft samples.
          const re = 2 * channel * plane + j;
          const im = re + plane;
          for (let k = 0; k < zeroed; k++) {
            block[re + k * FRAME_BLOCK] = 0;
            block[im + k * FRAME_BLOCK] = 0;
          }
          for (let k = zeroed; k < dimF; k++) {
            let r: number;
            let i: number;
            if (k > 1 && k < half - 1) {
              r = 0.5 * spectrum[2 * k] - 0.25 * (spectrum[2 * k - 2] + spectrum[2 * k + 2]);
              i = 0.5 * spectrum[2 * k + 1] - 0.25 * (spectrum[2 * k - 1] + spectrum[2 * k + 3]);
            } else {
              const [r0, i0] = bin(spectrum, k, nFft);
              const [rm, im_] = bin(spectrum, k - 1, nFft);
              const [rp, ip] = bin(spectrum, k + 1, nFft);
              r = 0.5 * r0 - 0.25 * (rm + rp);
              i = 0.5 * i0 - 0.25 * (im_ + ip);
            }
            block[re + k * FRAME_BLOCK] = r;
            block[im + k * FRAME_BLOCK] = i;
          }
        }
      }
      for (let row = 0; row < 4 * dimF; row++) {
        const src = row * FRAME_BLOCK;
        const dst = specOffset + row * dimT + t0;
        for (let j = 0; j < frames; j++) spec[dst + j] = block[src + j];
      }
    }
  }

  /**
   * Adds the kept part of the chunk whose spectrogram starts at `specOffset`
   * in `spec` (model layout) to `left`/`right` from `outOffset`, sample k
   * multiplied by `gain[k]` when given (the overlap-add weight).
   */
  synthesizeAdd(
    spec: Float32Array,
    specOffset: number,
    left: Float32Array,
    right: Float32Array,
    outOffset: number,
    gain?: Float32Array,
  ): void {
    this.#accLeft.fill(0);
    this.#accRight.fill(0);
    this.synthesizeFrames(spec, specOffset, this.#accLeft, this.#accRight);
    this.normalizeInto(this.#accLeft, this.#accRight, left, right, outOffset, gain);
  }

  /**
   * First half of synthesis: overlap-adds the frames that reach the kept part
   * (1..dimT−2), windowed, into `keptSize`-long accumulators (the STFT helper
   * thread runs this half, the calling thread normalizeInto).
   */
  synthesizeFrames(spec: Float32Array, specOffset: number, accLeft: Float32Array, accRight: Float32Array): void {
    const { nFft, hopLength, dimF, dimT, keptSize } = this;
    const half = nFft / 2;
    const fft = this.fft;
    const time = fft.time;
    const spectrum = fft.spectrum;
    const window = this.#synthesisWindow;
    const block = this.#block;
    const inner = Math.min(dimF, half);
    const plane = dimF * FRAME_BLOCK;
    // bins ≥ dimF stay zero; the plan may be shared, so clear what others left
    spectrum.fill(0, 2 * inner);
    if (dimF <= half) spectrum[1] = 0;
    // frames 0 and dimT−1 only reach the trimmed edges
    const end = dimT - 1;
    for (let t0 = 1; t0 < end; t0 += FRAME_BLOCK) {
      const frames = Math.min(FRAME_BLOCK, end - t0);
      for (let row = 0; row < 4 * dimF; row++) {
        const src = specOffset + row * dimT + t0;
        const dst = row * FRAME_BLOCK;
        for (let j = 0; j < frames; j++) block[dst + j] = spec[src + j];
      }
      for (let j = 0; j < frames; j++) {
        const start = (t0 + j) * hopLength - nFft;
        const from = Math.max(0, -start);
        const to = Math.min(nFft, keptSize - start);
        for (let channel = 0; channel < 2; channel++) {
          const re = 2 * channel * plane + j;
          const im = re + plane;
          spectrum[0] = block[re];
          for (let k = 1; k < inner; k++) {
            spectrum[2 * k] = block[re + k * FRAME_BLOCK];
            spectrum[2 * k + 1] = block[im + k * FRAME_BLOCK];
          }
          if (dimF > half) spectrum[1] = block[re + half * FRAME_BLOCK];
          fft.inverse();
          const acc = channel === 0 ? accLeft : accRight;
          for (let n = from; n < to; n++) acc[start + n] += time[n] * window[n];
        }
      }
    }
  }

  /**
   * Second half of synthesis: divides the accumulated frames by the window
   * envelope (as torch.istft does) and adds them, times `gain[k]` when given,
   * to `left`/`right` from `outOffset`.
   */
  normalizeInto(
    accLeft: Float32Array,
    accRight: Float32Array,
    left: Float32Array,
    right: Float32Array,
    outOffset: number,
    gain?: Float32Array,
  ): void {
    const inv = this.#inverseEnvelope;
    const keptSize = this.keptSize;
    if (gain) {
      for (let k = 0; k < keptSize; k++) {
        const g = inv[k] * gain[k];
        left[outOffset + k] += accLeft[k] * g;
        right[outOffset + k] += accRight[k] * g;
      }
    } else {
      for (let k = 0; k < keptSize; k++) {
        left[outOffset + k] += accLeft[k] * inv[k];
        right[outOffset + k] += accRight[k] * inv[k];
      }
    }
  }

  /** Like synthesizeAdd, but overwrites `keptSize` samples instead of adding. */
  synthesize(spec: Float32Array, specOffset: number, left: Float32Array, right: Float32Array, outOffset: number): void {
    left.fill(0, outOffset, outOffset + this.keptSize);
    right.fill(0, outOffset, outOffset + this.keptSize);
    this.synthesizeAdd(spec, specOffset, left, right, outOffset);
  }
}

/** Bin k (any integer) of a real signal's packed spectrum, using X[−k] = X[N−k] = conj X[k]. */
function bin(spectrum: Float32Array, k: number, n: number): [number, number] {
  let m = ((k % n) + n) % n;
  let sign = 1;
  if (m > n / 2) {
    m = n - m;
    sign = -1;
  }
  if (m === 0) return [spectrum[0], 0];
  if (m === n / 2) return [spectrum[1], 0];
  return [spectrum[2 * m], sign * spectrum[2 * m + 1]];
}

function validate({ nFft, hopLength, dimF, dimT }: MdxStftConfig): void {
  if (!Number.isInteger(nFft) || nFft < 8 || nFft % 2 !== 0)
    throw new RangeError(`nFft must be an even integer >= 8, got ${nFft}`);
  if (!Number.isInteger(hopLength) || hopLength < 1 || hopLength > nFft) throw new RangeError(`invalid hopLength ${hopLength}`);
  if (!Number.isInteger(dimF) || dimF < 1 || dimF > nFft / 2 + 1) throw new RangeError(`dimF must be 1..nFft/2+1, got ${dimF}`);
  if (!Number.isInteger(dimT) || dimT < 2) throw new RangeError(`invalid dimT ${dimT}`);
  if (hopLength * (dimT - 1) <= nFft) {
    throw new RangeError(`chunk of ${hopLength * (dimT - 1)} samples is too short for nFft ${nFft}: nothing left after trimming`);
  }
}
