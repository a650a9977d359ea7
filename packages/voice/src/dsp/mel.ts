/** Slaney-style mel scale helpers and a triangular filterbank over the bins of an n_fft STFT. */
export const hzToMel = (hz: number): number => 2595 * Math.log10(1 + hz / 700);
export const melToHz = (mel: number): number => 700 * (10 ** (mel / 2595) - 1);

/** Triangular filters [bands][bins], each normalised to unit area so band energies are averages. */
export function melFilterbank(sampleRate: number, nFft: number, bands: number, fMin: number, fMax: number): Float32Array[] {
  const bins = nFft / 2 + 1;
  const lo = hzToMel(fMin);
  const hi = hzToMel(Math.min(fMax, sampleRate / 2));
  const edges = Array.from({ length: bands + 2 }, (_, i) => melToHz(lo + ((hi - lo) * i) / (bands + 1)));
  const binHz = sampleRate / nFft;
  const filters: Float32Array[] = [];
  for (let b = 0; b < bands; b++) {
    const [l, c, r] = [edges[b]!, edges[b + 1]!, edges[b + 2]!];
    const f = new Float32Array(bins);
    let sum = 0;
    for (let k = 0; k < bins; k++) {
      const hz = k * binHz;
      const w = hz <= l || hz >= r ? 0 : hz <= c ? (hz - l) / (c - l) : (r - hz) / (r - c);
      f[k] = w;
      sum += w;
    }
    // A band narrower than one bin still needs the bin nearest its centre.
    if (sum === 0) {
      f[Math.min(bins - 1, Math.round(c / binHz))] = 1;
      sum = 1;
    }
    for (let k = 0; k < bins; k++) f[k] = f[k]! / sum;
    filters.push(f);
  }
  return filters;
}

/**
 * How a per-band value spreads back onto bins [bands][bins]: each bin takes the weighted average
 * of the bands covering it; bins outside every band take the nearest band.
 */
export function bandToBinMatrix(filters: Float32Array[]): Float32Array {
  const bands = filters.length;
  const bins = filters[0]!.length;
  const m = new Float32Array(bands * bins);
  let firstCovered = -1;
  for (let k = 0; k < bins; k++) {
    let total = 0;
    for (let b = 0; b < bands; b++) total += filters[b]![k]! > 0 ? 1 : 0;
    if (total > 0 && firstCovered < 0) firstCovered = k;
  }
  for (let k = 0; k < bins; k++) {
    let sum = 0;
    for (let b = 0; b < bands; b++) sum += filters[b]![k]!;
    if (sum > 0) {
      for (let b = 0; b < bands; b++) m[b * bins + k] = filters[b]![k]! / sum;
    } else {
      m[(k < firstCovered ? 0 : bands - 1) * bins + k] = 1;
    }
  }
  return m;
}
