export interface PitchTrackOptions {
  /** Samples between frame centres. */
  hop: number;
  fMin?: number;
  fMax?: number;
  /** YIN absolute threshold on the cumulative-mean-normalised difference. */
  threshold?: number;
}

/**
 * YIN f0 tracker (de Cheveigné & Kawahara 2002): difference function, cumulative-mean
 * normalisation, absolute threshold, parabolic interpolation. Frame t is centred on sample
 * t·hop; the result has floor(length / hop) + 1 values, 0 where unvoiced.
 */
export function trackPitch(signal: Float32Array, sampleRate: number, options: PitchTrackOptions): Float32Array {
  const { hop } = options;
  const fMin = options.fMin ?? 50;
  const fMax = options.fMax ?? 1100;
  const threshold = options.threshold ?? 0.15;
  const tauMin = Math.max(2, Math.floor(sampleRate / fMax));
  const tauMax = Math.ceil(sampleRate / fMin);
  const w = tauMax;
  const frames = Math.floor(signal.length / hop) + 1;
  const f0 = new Float32Array(frames);
  const d = new Float64Array(tauMax + 2);
  const half = Math.floor((w + tauMax) / 2);
  let peak = 0;
  for (let i = 0; i < signal.length; i++) peak = Math.max(peak, Math.abs(signal[i]!));
  const silence = (peak * 0.01) ** 2;

  for (let t = 0; t < frames; t++) {
    const start = t * hop - half;
    if (start < 0 || start + w + tauMax + 1 > signal.length) continue;
    let energy = 0;
    for (let j = 0; j < w; j++) energy += signal[start + j]! ** 2;
    if (energy / w < silence) continue;
    for (let tau = 1; tau <= tauMax + 1; tau++) {
      let sum = 0;
      for (let j = 0; j < w; j++) {
        const diff = signal[start + j]! - signal[start + j + tau]!;
        sum += diff * diff;
      }
      d[tau] = sum;
    }
    // cumulative mean normalised difference, in place
    let running = 0;
    d[0] = 1;
    for (let tau = 1; tau <= tauMax + 1; tau++) {
      running += d[tau]!;
      d[tau] = running > 0 ? (d[tau]! * tau) / running : 1;
    }
    let best = -1;
    for (let tau = tauMin; tau <= tauMax; tau++) {
      if (d[tau]! < threshold) {
        while (tau + 1 <= tauMax && d[tau + 1]! < d[tau]!) tau++;
        best = tau;
        break;
      }
    }
    if (best < 0) continue;
    const a = d[best - 1]!;
    const b = d[best]!;
    const c = d[best + 1]!;
    const denom = a - 2 * b + c;
    const shift = denom !== 0 ? (0.5 * (a - c)) / denom : 0;
    f0[t] = sampleRate / (best + Math.max(-1, Math.min(1, shift)));
  }
  return f0;
}

/** Median of the voiced (non-zero) values, or NaN. */
export function medianVoiced(f0: Float32Array): number {
  const voiced = Array.from(f0)
    .filter((v) => v > 0)
    .sort((a, b) => a - b);
  if (voiced.length === 0) return Number.NaN;
  const mid = voiced.length >> 1;
  return voiced.length % 2 ? voiced[mid]! : (voiced[mid - 1]! + voiced[mid]!) / 2;
}

/**
 * How far one f0 contour sits from another, in semitones: the median over frames voiced in both
 * of 12·log2(b/a). Frame-by-frame, so it measures "the output's contour is the input's times
 * 2^(k/12)" and is not swayed by frames voiced in only one of them.
 */
export function contourShiftSemitones(a: Float32Array, b: Float32Array): number {
  const ratios: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i]! > 0 && b[i]! > 0) ratios.push(12 * Math.log2(b[i]! / a[i]!));
  if (ratios.length === 0) return Number.NaN;
  ratios.sort((x, y) => x - y);
  const mid = ratios.length >> 1;
  return ratios.length % 2 ? ratios[mid]! : (ratios[mid - 1]! + ratios[mid]!) / 2;
}
