/**
 * The numerical building blocks of Matchering's frequency matching, written from the
 * definitions NumPy, SciPy and statsmodels document (and their sources read, not copied):
 * `linspace`/`logspace` with NumPy's rounding, SciPy's symmetric Hann window, the not-a-knot
 * cubic spline SciPy's `interp1d(kind="cubic")` fits, and statsmodels' LOWESS with its
 * `delta` interpolation.
 */

/** NumPy's `linspace(start, stop, num)`: i·step + start, the last value exactly `stop`. */
export function linspace(start: number, stop: number, num: number): Float64Array {
  const out = new Float64Array(num);
  if (num === 1) {
    out[0] = start;
    return out;
  }
  const step = (stop - start) / (num - 1);
  for (let i = 0; i < num; i++) out[i] = i * step + start;
  out[num - 1] = stop;
  return out;
}

/** NumPy's `logspace(start, stop, num)`: 10 to the power of `linspace`. */
export function logspace(start: number, stop: number, num: number): Float64Array {
  const out = linspace(start, stop, num);
  for (let i = 0; i < num; i++) out[i] = Math.pow(10, out[i]);
  return out;
}

/** SciPy's `windows.hann(m)` (symmetric): 0.5 + 0.5·cos over `linspace(-π, π, m)`. */
export function hannSymmetric(m: number): Float64Array {
  const phase = linspace(-Math.PI, Math.PI, m);
  const out = new Float64Array(m);
  for (let i = 0; i < m; i++) out[i] = 0.5 + 0.5 * Math.cos(phase[i]);
  return out;
}

/**
 * The cubic spline through (x, y) with not-a-knot ends (the third derivative continuous at the
 * second and the next-to-last knot), which is what `interp1d(kind="cubic")` builds; evaluated
 * outside the knots it extends the end pieces (`fill_value="extrapolate"`).
 */
export class NotAKnotSpline {
  readonly #x: Float64Array;
  readonly #y: Float64Array;
  /** second derivatives at the knots */
  readonly #m: Float64Array;

  constructor(x: Float64Array, y: Float64Array) {
    const n = x.length;
    if (n < 4 || y.length !== n) throw new RangeError("a not-a-knot cubic spline needs at least 4 points");
    this.#x = x;
    this.#y = y;
    const h = new Float64Array(n - 1);
    for (let i = 0; i < n - 1; i++) h[i] = x[i + 1] - x[i];
    // rows for M[1..n-2]: sub-diagonal a, diagonal b, super-diagonal c, right side r
    const size = n - 2;
    const a = new Float64Array(size);
    const b = new Float64Array(size);
    const c = new Float64Array(size);
    const r = new Float64Array(size);
    for (let i = 1; i <= n - 2; i++) {
      const row = i - 1;
      a[row] = h[i - 1];
      b[row] = 2 * (h[i - 1] + h[i]);
      c[row] = h[i];
      r[row] = 6 * ((y[i + 1] - y[i]) / h[i] - (y[i] - y[i - 1]) / h[i - 1]);
    }
    // not-a-knot at x[1]: M0 = ((h0 + h1)·M1 − h0·M2) / h1, folded into the first row
    const h0 = h[0];
    const h1 = h[1];
    b[0] += (h0 * (h0 + h1)) / h1;
    c[0] -= (h0 * h0) / h1;
    // and at x[n-2]: M[n-1] = ((hl + hp)·M[n-2] − hl·M[n-3]) / hp, with hp = h[n-3], hl = h[n-2]
    const hp = h[n - 3];
    const hl = h[n - 2];
    b[size - 1] += (hl * (hl + hp)) / hp;
    a[size - 1] -= (hl * hl) / hp;
    // Thomas algorithm (the system is diagonally dominant for these grids)
    for (let i = 1; i < size; i++) {
      const w = a[i] / b[i - 1];
      b[i] -= w * c[i - 1];
      r[i] -= w * r[i - 1];
    }
    const m = new Float64Array(n);
    m[size] = r[size - 1] / b[size - 1];
    for (let i = size - 2; i >= 0; i--) m[i + 1] = (r[i] - c[i] * m[i + 2]) / b[i];
    m[0] = ((h0 + h1) * m[1] - h0 * m[2]) / h1;
    m[n - 1] = ((hl + hp) * m[n - 2] - hl * m[n - 3]) / hp;
    this.#m = m;
  }

  /** The spline's values at `points` (ascending or not). */
  evaluate(points: Float64Array): Float64Array {
    const x = this.#x;
    const y = this.#y;
    const m = this.#m;
    const last = x.length - 2;
    const out = new Float64Array(points.length);
    let i = 0;
    for (let p = 0; p < points.length; p++) {
      const t = points[p];
      if (t < x[i]) i = 0;
      while (i < last && t > x[i + 1]) i++;
      const h = x[i + 1] - x[i];
      const left = x[i + 1] - t;
      const right = t - x[i];
      out[p] =
        (m[i] * left * left * left + m[i + 1] * right * right * right) / (6 * h) +
        (y[i] / h - (m[i] * h) / 6) * left +
        (y[i + 1] / h - (m[i + 1] * h) / 6) * right;
    }
    return out;
  }
}

/**
 * statsmodels' `lowess(y, x, frac, it=0, delta)` fitted values, for ascending `x`: at each fitted
 * point a linear regression over its `frac·n` nearest neighbours with tricube weights; points
 * within `delta` of the last fit are interpolated linearly between fits, as its Cython loop
 * chooses them. Robustifying iterations (`it > 0`) are not used by Matchering and not offered.
 */
export function lowess(y: Float64Array, x: Float64Array, frac: number, delta: number): Float64Array {
  const n = x.length;
  let k = Math.trunc(frac * n + 1e-10);
  if (k < 2) k = 2;
  if (k > n) k = n;
  const fit = new Float64Array(n);
  const weights = new Float64Array(n);
  let i = 0;
  let lastFit = -1;
  let left = 0;
  let right = k;
  for (;;) {
    const xval = x[i];
    while (right < n && xval > (x[left] + x[right]) / 2) {
      left++;
      right++;
    }
    const radius = Math.max(xval - x[left], x[right - 1] - xval);
    let sumWeights = 0;
    let nonzero = 0;
    for (let j = left; j < right; j++) {
      const d = Math.abs(x[j] - xval) / radius;
      const cube = 1 - d * d * d;
      const w = cube * cube * cube;
      weights[j] = w;
      sumWeights += w;
      if (w > 1e-12) nonzero++;
    }
    if (nonzero < 2) {
      fit[i] = y[i];
    } else {
      for (let j = left; j < right; j++) weights[j] /= sumWeights;
      let meanX = 0;
      for (let j = left; j < right; j++) meanX += weights[j] * x[j];
      let spread = 0;
      for (let j = left; j < right; j++) spread += weights[j] * (x[j] - meanX) ** 2;
      spread = Math.max(spread, 1e-12);
      let value = 0;
      for (let j = left; j < right; j++) value += weights[j] * (1 + ((xval - meanX) * (x[j] - meanX)) / spread) * y[j];
      fit[i] = value;
    }
    if (lastFit < i - 1) {
      const span = x[i] - x[lastFit];
      for (let j = lastFit + 1; j < i; j++) {
        const a = (x[j] - x[lastFit]) / span;
        fit[j] = a * fit[i] + (1 - a) * fit[lastFit];
      }
    }
    // the next fit: the last point within delta of this one (equal x share this fit)
    lastFit = i;
    const cutpoint = x[lastFit] + delta;
    let next = lastFit;
    for (next = lastFit + 1; next < n; next++) {
      if (x[next] > cutpoint) break;
      if (x[next] === x[lastFit]) {
        fit[next] = fit[lastFit];
        lastFit = next;
      }
    }
    if (next === n) next = n - 1;
    i = Math.max(next - 1, lastFit + 1);
    if (lastFit >= n - 1) break;
  }
  return fit;
}
