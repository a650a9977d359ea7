import { ComplexFft } from "@mixdown/separation/fft";
import { melFilterbank } from "./mel.ts";
import { hann } from "./window.ts";

export interface LogMelFrame {
  /** Natural log of each mel band's mean power. */
  logMel: Float64Array;
  /** Natural log of the frame's total power. */
  logEnergy: number;
}

/**
 * Log mel band powers of a mono signal, frame by frame: 1024-point Hann frames, hop 256, `bands`
 * bands from 50 Hz to 8 kHz (or Nyquist). The timbre measures and the voice cover image read it.
 */
export function* logMelFrames(signal: Float32Array, sampleRate: number, bands = 40): Generator<LogMelFrame> {
  const n = 1024;
  const hop = 256;
  const filters = melFilterbank(sampleRate, n, bands, 50, Math.min(8000, sampleRate / 2));
  const fft = new ComplexFft(n);
  const re = new Float64Array(n);
  const im = new Float64Array(n);
  const window = hann(n);
  const power = new Float64Array(n / 2 + 1);
  for (let start = 0; start + n <= signal.length; start += hop) {
    for (let i = 0; i < n; i++) {
      re[i] = signal[start + i]! * window[i]!;
      im[i] = 0;
    }
    fft.forward(re, im);
    let total = 0;
    for (let k = 0; k <= n / 2; k++) {
      power[k] = re[k]! ** 2 + im[k]! ** 2;
      total += power[k]!;
    }
    const logMel = new Float64Array(bands);
    for (let b = 0; b < bands; b++) {
      let e = 0;
      for (let k = 0; k <= n / 2; k++) e += filters[b]![k]! * power[k]!;
      logMel[b] = Math.log(e + 1e-10);
    }
    yield { logMel, logEnergy: Math.log(total + 1e-10) };
  }
}

/**
 * Mean MFCC (c1..c12, c0 left out: it is loudness, not timbre) over the active frames of a mono
 * signal: 40 mel bands, 1024-point frames, hop 256. Used to measure how close a voice is to another.
 */
export function mfccMean(signal: Float32Array, sampleRate: number, coefficients = 12): Float64Array {
  const bands = 40;
  const frames: Float64Array[] = [];
  const energies: number[] = [];
  for (const { logMel, logEnergy } of logMelFrames(signal, sampleRate, bands)) {
    const c = new Float64Array(coefficients);
    for (let q = 1; q <= coefficients; q++) {
      let s = 0;
      for (let b = 0; b < bands; b++) s += logMel[b]! * Math.cos((Math.PI * q * (b + 0.5)) / bands);
      c[q - 1] = s * Math.sqrt(2 / bands);
    }
    frames.push(c);
    energies.push(logEnergy);
  }
  const sorted = [...energies].sort((a, b) => a - b);
  const threshold = (sorted[Math.floor(0.95 * (sorted.length - 1))] ?? 0) - Math.log(1000);
  const mean = new Float64Array(coefficients);
  let count = 0;
  frames.forEach((c, i) => {
    if (energies[i]! < threshold) return;
    count++;
    for (let q = 0; q < coefficients; q++) mean[q] = mean[q]! + c[q]!;
  });
  for (let q = 0; q < coefficients; q++) mean[q] = mean[q]! / Math.max(1, count);
  return mean;
}

export function mfccDistance(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i]! - b[i]!) ** 2;
  return Math.sqrt(s);
}
