/**
 * Mixed-radix complex FFT (Stockham autosort, radices 4, 2, 3, 5 and a generic
 * odd-radix butterfly), planned once per size and reused for every frame.
 *
 * MDX-Net models use n_fft values such as 4096, 5120, 6144 and 7680, so sizes
 * that are not powers of two must be exact and fast; every size whose prime
 * factors are 2, 3 and 5 runs on specialised butterflies, any other prime
 * falls back to an O(p^2) butterfly (still exact).
 *
 * Stockham needs no bit-reversal pass: each stage reads one buffer and writes
 * the other, and the result ends in natural order.
 *
 * It is the workspace's one complex FFT: @mixdown/voice imports it through
 * `@mixdown/separation/fft` (this module imports nothing) for its STFT, log-mel
 * and RMVPE frames of 512 to 2048 points. Measured against the radix-2 FFT voice
 * had before (issue 57), it was 1.3 to 1.7 times faster on those sizes, with
 * results within 5e-13 of it.
 */

interface FftStage {
  radix: number;
  /** length of the sub-transforms already combined before this stage */
  span: number;
  /** twiddles for k = 0..span-1 and r = 1..radix-1, (cos, sin) of -2πi·k·r/(span·radix) */
  twiddleRe: Float64Array;
  twiddleIm: Float64Array;
}

function factorize(n: number): number[] {
  const radices: number[] = [];
  let rest = n;
  while (rest % 4 === 0) {
    radices.push(4);
    rest /= 4;
  }
  for (const p of [2, 3, 5]) {
    while (rest % p === 0) {
      radices.push(p);
      rest /= p;
    }
  }
  for (let p = 7; rest > 1; p += 2) {
    while (rest % p === 0) {
      radices.push(p);
      rest /= p;
    }
  }
  return radices;
}

export class ComplexFft {
  readonly size: number;
  readonly #stages: FftStage[];
  readonly #scratchRe: Float64Array;
  readonly #scratchIm: Float64Array;
  /** per-radix DFT matrices for the generic butterfly */
  readonly #genericCos = new Map<number, Float64Array>();
  readonly #genericSin = new Map<number, Float64Array>();

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`FFT size must be a positive integer, got ${size}`);
    this.size = size;
    this.#scratchRe = new Float64Array(size);
    this.#scratchIm = new Float64Array(size);
    this.#stages = [];
    let span = 1;
    for (const radix of factorize(size)) {
      const twiddleRe = new Float64Array(span * (radix - 1));
      const twiddleIm = new Float64Array(span * (radix - 1));
      for (let k = 0; k < span; k++) {
        for (let r = 1; r < radix; r++) {
          const angle = (-2 * Math.PI * k * r) / (span * radix);
          twiddleRe[k * (radix - 1) + r - 1] = Math.cos(angle);
          twiddleIm[k * (radix - 1) + r - 1] = Math.sin(angle);
        }
      }
      this.#stages.push({ radix, span, twiddleRe, twiddleIm });
      if (radix > 5 && !this.#genericCos.has(radix)) {
        const c = new Float64Array(radix * radix);
        const s = new Float64Array(radix * radix);
        for (let a = 0; a < radix; a++) {
          for (let b = 0; b < radix; b++) {
            c[a * radix + b] = Math.cos((-2 * Math.PI * ((a * b) % radix)) / radix);
            s[a * radix + b] = Math.sin((-2 * Math.PI * ((a * b) % radix)) / radix);
          }
        }
        this.#genericCos.set(radix, c);
        this.#genericSin.set(radix, s);
      }
      span *= radix;
    }
  }

  /** In-place forward DFT: X[k] = Σ x[n]·e^(-2πi·kn/N). */
  forward(re: Float64Array, im: Float64Array): void {
    this.#transform(re, im);
  }

  /** In-place inverse DFT, scaled by 1/N. */
  inverse(re: Float64Array, im: Float64Array): void {
    // conj(FFT(conj(x))) avoids a second set of twiddles
    const n = this.size;
    for (let i = 0; i < n; i++) im[i] = -im[i];
    this.#transform(re, im);
    const scale = 1 / n;
    for (let i = 0; i < n; i++) {
      re[i] *= scale;
      im[i] = -im[i] * scale;
    }
  }

  #transform(re: Float64Array, im: Float64Array): void {
    let srcRe = re;
    let srcIm = im;
    let dstRe = this.#scratchRe;
    let dstIm = this.#scratchIm;
    for (const stage of this.#stages) {
      switch (stage.radix) {
        case 4:
          this.#radix4(stage, srcRe, srcIm, dstRe, dstIm);
          break;
        case 2:
          this.#radix2(stage, srcRe, srcIm, dstRe, dstIm);
          break;
        case 3:
          this.#radix3(stage, srcRe, srcIm, dstRe, dstIm);
          break;
        case 5:
          this.#radix5(stage, srcRe, srcIm, dstRe, dstIm);
          break;
        default:
          this.#radixGeneric(stage, srcRe, srcIm, dstRe, dstIm);
      }
      const tRe = srcRe;
      const tIm = srcIm;
      srcRe = dstRe;
      srcIm = dstIm;
      dstRe = tRe;
      dstIm = tIm;
    }
    if (srcRe !== re) {
      re.set(srcRe);
      im.set(srcIm);
    }
  }

  // Each stage: for j in 0..N/R-1 with k = j mod span, g = j div span, read
  // v[r] = src[j + r·N/R], twiddle by w^(k·r), do a radix-R DFT and write
  // dst[g·span·R + k + r·span].

  #radix2(stage: FftStage, sRe: Float64Array, sIm: Float64Array, dRe: Float64Array, dIm: Float64Array): void {
    const { span, twiddleRe, twiddleIm } = stage;
    const quarter = this.size / 2;
    const groups = quarter / span;
    for (let g = 0; g < groups; g++) {
      const inBase = g * span;
      const outBase = g * span * 2;
      for (let k = 0; k < span; k++) {
        const i0 = inBase + k;
        const i1 = i0 + quarter;
        const wr = twiddleRe[k];
        const wi = twiddleIm[k];
        const ar = sRe[i0];
        const ai = sIm[i0];
        const br = sRe[i1] * wr - sIm[i1] * wi;
        const bi = sRe[i1] * wi + sIm[i1] * wr;
        const o = outBase + k;
        dRe[o] = ar + br;
        dIm[o] = ai + bi;
        dRe[o + span] = ar - br;
        dIm[o + span] = ai - bi;
      }
    }
  }

  #radix4(stage: FftStage, sRe: Float64Array, sIm: Float64Array, dRe: Float64Array, dIm: Float64Array): void {
    const { span, twiddleRe, twiddleIm } = stage;
    const quarter = this.size / 4;
    const groups = quarter / span;
    for (let g = 0; g < groups; g++) {
      const inBase = g * span;
      const outBase = g * span * 4;
      for (let k = 0; k < span; k++) {
        const i0 = inBase + k;
        const i1 = i0 + quarter;
        const i2 = i1 + quarter;
        const i3 = i2 + quarter;
        const t = k * 3;
        const w1r = twiddleRe[t];
        const w1i = twiddleIm[t];
        const w2r = twiddleRe[t + 1];
        const w2i = twiddleIm[t + 1];
        const w3r = twiddleRe[t + 2];
        const w3i = twiddleIm[t + 2];
        const x0r = sRe[i0];
        const x0i = sIm[i0];
        const x1r = sRe[i1] * w1r - sIm[i1] * w1i;
        const x1i = sRe[i1] * w1i + sIm[i1] * w1r;
        const x2r = sRe[i2] * w2r - sIm[i2] * w2i;
        const x2i = sRe[i2] * w2i + sIm[i2] * w2r;
        const x3r = sRe[i3] * w3r - sIm[i3] * w3i;
        const x3i = sRe[i3] * w3i + sIm[i3] * w3r;
        const a0r = x0r + x2r;
        const a0i = x0i + x2i;
        const a1r = x0r - x2r;
        const a1i = x0i - x2i;
        const b0r = x1r + x3r;
        const b0i = x1i + x3i;
        // -i·(x1 - x3)
        const b1r = x1i - x3i;
        const b1i = x3r - x1r;
        const o = outBase + k;
        dRe[o] = a0r + b0r;
        dIm[o] = a0i + b0i;
        dRe[o + span] = a1r + b1r;
        dIm[o + span] = a1i + b1i;
        dRe[o + 2 * span] = a0r - b0r;
        dIm[o + 2 * span] = a0i - b0i;
        dRe[o + 3 * span] = a1r - b1r;
        dIm[o + 3 * span] = a1i - b1i;
      }
    }
  }

  #radix3(stage: FftStage, sRe: Float64Array, sIm: Float64Array, dRe: Float64Array, dIm: Float64Array): void {
    const { span, twiddleRe, twiddleIm } = stage;
    const third = this.size / 3;
    const groups = third / span;
    const c1 = -0.5;
    const s1 = -Math.sqrt(3) / 2;
    for (let g = 0; g < groups; g++) {
      const inBase = g * span;
      const outBase = g * span * 3;
      for (let k = 0; k < span; k++) {
        const i0 = inBase + k;
        const i1 = i0 + third;
        const i2 = i1 + third;
        const t = k * 2;
        const w1r = twiddleRe[t];
        const w1i = twiddleIm[t];
        const w2r = twiddleRe[t + 1];
        const w2i = twiddleIm[t + 1];
        const x0r = sRe[i0];
        const x0i = sIm[i0];
        const x1r = sRe[i1] * w1r - sIm[i1] * w1i;
        const x1i = sRe[i1] * w1i + sIm[i1] * w1r;
        const x2r = sRe[i2] * w2r - sIm[i2] * w2i;
        const x2i = sRe[i2] * w2i + sIm[i2] * w2r;
        const sr = x1r + x2r;
        const si = x1i + x2i;
        const dr = x1r - x2r;
        const di = x1i - x2i;
        const mr = x0r + c1 * sr;
        const mi = x0i + c1 * si;
        // ±i·s1·(x1 − x2), with e^(−2πi/3) = c1 + i·s1
        const nr = -s1 * di;
        const ni = s1 * dr;
        const o = outBase + k;
        dRe[o] = x0r + sr;
        dIm[o] = x0i + si;
        dRe[o + span] = mr + nr;
        dIm[o + span] = mi + ni;
        dRe[o + 2 * span] = mr - nr;
        dIm[o + 2 * span] = mi - ni;
      }
    }
  }

  #radix5(stage: FftStage, sRe: Float64Array, sIm: Float64Array, dRe: Float64Array, dIm: Float64Array): void {
    const { span, twiddleRe, twiddleIm } = stage;
    const fifth = this.size / 5;
    const groups = fifth / span;
    const c1 = Math.cos((2 * Math.PI) / 5);
    const c2 = Math.cos((4 * Math.PI) / 5);
    const s1 = -Math.sin((2 * Math.PI) / 5);
    const s2 = -Math.sin((4 * Math.PI) / 5);
    for (let g = 0; g < groups; g++) {
      const inBase = g * span;
      const outBase = g * span * 5;
      for (let k = 0; k < span; k++) {
        const i0 = inBase + k;
        const t = k * 4;
        const x0r = sRe[i0];
        const x0i = sIm[i0];
        let i = i0 + fifth;
        let wr = twiddleRe[t];
        let wi = twiddleIm[t];
        const x1r = sRe[i] * wr - sIm[i] * wi;
        const x1i = sRe[i] * wi + sIm[i] * wr;
        i += fifth;
        wr = twiddleRe[t + 1];
        wi = twiddleIm[t + 1];
        const x2r = sRe[i] * wr - sIm[i] * wi;
        const x2i = sRe[i] * wi + sIm[i] * wr;
        i += fifth;
        wr = twiddleRe[t + 2];
        wi = twiddleIm[t + 2];
        const x3r = sRe[i] * wr - sIm[i] * wi;
        const x3i = sRe[i] * wi + sIm[i] * wr;
        i += fifth;
        wr = twiddleRe[t + 3];
        wi = twiddleIm[t + 3];
        const x4r = sRe[i] * wr - sIm[i] * wi;
        const x4i = sRe[i] * wi + sIm[i] * wr;
        const a1r = x1r + x4r;
        const a1i = x1i + x4i;
        const b1r = x1r - x4r;
        const b1i = x1i - x4i;
        const a2r = x2r + x3r;
        const a2i = x2i + x3i;
        const b2r = x2r - x3r;
        const b2i = x2i - x3i;
        const m1r = x0r + c1 * a1r + c2 * a2r;
        const m1i = x0i + c1 * a1i + c2 * a2i;
        const m2r = x0r + c2 * a1r + c1 * a2r;
        const m2i = x0i + c2 * a1i + c1 * a2i;
        // i·(s1·b1 + s2·b2) and i·(s2·b1 - s1·b2)
        const n1r = -(s1 * b1i + s2 * b2i);
        const n1i = s1 * b1r + s2 * b2r;
        const n2r = -(s2 * b1i - s1 * b2i);
        const n2i = s2 * b1r - s1 * b2r;
        const o = outBase + k;
        dRe[o] = x0r + a1r + a2r;
        dIm[o] = x0i + a1i + a2i;
        dRe[o + span] = m1r + n1r;
        dIm[o + span] = m1i + n1i;
        dRe[o + 2 * span] = m2r + n2r;
        dIm[o + 2 * span] = m2i + n2i;
        dRe[o + 3 * span] = m2r - n2r;
        dIm[o + 3 * span] = m2i - n2i;
        dRe[o + 4 * span] = m1r - n1r;
        dIm[o + 4 * span] = m1i - n1i;
      }
    }
  }

  #radixGeneric(stage: FftStage, sRe: Float64Array, sIm: Float64Array, dRe: Float64Array, dIm: Float64Array): void {
    const { radix, span, twiddleRe, twiddleIm } = stage;
    const part = this.size / radix;
    const groups = part / span;
    const cosTable = this.#genericCos.get(radix)!;
    const sinTable = this.#genericSin.get(radix)!;
    const vRe = new Float64Array(radix);
    const vIm = new Float64Array(radix);
    for (let g = 0; g < groups; g++) {
      for (let k = 0; k < span; k++) {
        const i0 = g * span + k;
        vRe[0] = sRe[i0];
        vIm[0] = sIm[i0];
        for (let r = 1; r < radix; r++) {
          const i = i0 + r * part;
          const wr = twiddleRe[k * (radix - 1) + r - 1];
          const wi = twiddleIm[k * (radix - 1) + r - 1];
          vRe[r] = sRe[i] * wr - sIm[i] * wi;
          vIm[r] = sRe[i] * wi + sIm[i] * wr;
        }
        const o = g * span * radix + k;
        for (let q = 0; q < radix; q++) {
          let accRe = 0;
          let accIm = 0;
          for (let r = 0; r < radix; r++) {
            const c = cosTable[q * radix + r];
            const s = sinTable[q * radix + r];
            accRe += vRe[r] * c - vIm[r] * s;
            accIm += vRe[r] * s + vIm[r] * c;
          }
          dRe[o + q * span] = accRe;
          dIm[o + q * span] = accIm;
        }
      }
    }
  }
}
