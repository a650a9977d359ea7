import { ComplexFft } from "@mixdown/separation/fft";
import type { MatcheringConfig } from "./config.ts";
import { hannSymmetric, linspace, logspace, lowess, NotAKnotSpline } from "./numeric.ts";

/**
 * Sums of one channel's magnitude spectra over consecutive non-overlapping rectangular frames
 * (`scipy.signal.stft` with a boxcar window, no padding nor boundary frames, "spectrum" scaling:
 * |rfft| / fftSize), frame by frame as the samples arrive.
 */
export class MagnitudeSpectrumSum {
  readonly bins: number;
  readonly sum: Float64Array;
  frames = 0;
  readonly #fft: ComplexFft;
  readonly #re: Float64Array;
  readonly #im: Float64Array;

  constructor(fftSize: number) {
    this.#fft = new ComplexFft(fftSize);
    this.bins = fftSize / 2 + 1;
    this.sum = new Float64Array(this.bins);
    this.#re = new Float64Array(fftSize);
    this.#im = new Float64Array(fftSize);
  }

  /** Adds the frame `samples[offset .. offset + fftSize)`, each sample times `gain`. */
  addFrame(samples: Float64Array, offset: number, gain: number): void {
    const size = this.#fft.size;
    for (let i = 0; i < size; i++) this.#re[i] = samples[offset + i] * gain;
    this.#im.fill(0);
    this.#fft.forward(this.#re, this.#im);
    for (let k = 0; k < this.bins; k++) this.sum[k] += Math.hypot(this.#re[k], this.#im[k]) / size;
    this.frames++;
  }
}

/**
 * The matching EQ's impulse response: the ratio of the reference's average spectrum to the
 * target's, resampled onto a logarithmic frequency grid (cubic), smoothed there with LOWESS,
 * brought back to the linear grid (cubic, extrapolated below the log grid's first point), DC
 * zeroed and the first bin kept raw; its inverse real FFT, centred and Hann-windowed (`fftSize`
 * taps). Matchering's `get_fir`.
 */
export function matchingFir(targetAverage: Float64Array, referenceAverage: Float64Array, config: MatcheringConfig): Float64Array {
  const { fftSize, internalSampleRate, linLogOversampling, minValue, lowessFrac, lowessDelta } = config;
  const bins = fftSize / 2 + 1;
  const matching = new Float64Array(bins);
  for (let k = 0; k < bins; k++) matching[k] = referenceAverage[k] / Math.max(minValue, targetAverage[k]);

  const nyquist = internalSampleRate * 0.5;
  const gridLinear = linspace(0, 1, bins).map((v) => nyquist * v);
  const gridLog = logspace(Math.log10(4 / fftSize), 0, (fftSize / 2) * linLogOversampling + 1).map((v) => nyquist * v);
  const onLog = new NotAKnotSpline(gridLinear, matching).evaluate(gridLog);
  const smoothed = lowess(onLog, linspace(0, 1, onLog.length), lowessFrac, lowessDelta);
  const filtered = new NotAKnotSpline(gridLog, smoothed).evaluate(gridLinear);
  filtered[0] = 0;
  filtered[1] = matching[1];

  // inverse real FFT of a real spectrum: the Hermitian full spectrum through the complex FFT
  const fft = new ComplexFft(fftSize);
  const re = new Float64Array(fftSize);
  const im = new Float64Array(fftSize);
  for (let k = 0; k < bins; k++) re[k] = filtered[k];
  for (let k = 1; k < fftSize / 2; k++) re[fftSize - k] = filtered[k];
  fft.inverse(re, im);
  const window = hannSymmetric(fftSize);
  const fir = new Float64Array(fftSize);
  const half = fftSize / 2;
  for (let i = 0; i < fftSize; i++) fir[i] = re[(i + half) % fftSize] * window[i];
  return fir;
}
