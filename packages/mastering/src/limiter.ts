import type { MatcheringConfig } from "./config.ts";

/** A first-order IIR filter `b0 + b1·z⁻¹ / 1 + a1·z⁻¹`, run as SciPy's `lfilter` runs it (transposed direct form II). */
export class FirstOrderFilter {
  readonly b0: number;
  readonly b1: number;
  readonly a1: number;
  state: number;

  constructor(b0: number, b1: number, a1: number, state = 0) {
    this.b0 = b0;
    this.b1 = b1;
    this.a1 = a1;
    this.state = state;
  }

  step(x: number): number {
    const y = this.b0 * x + this.state;
    this.state = this.b1 * x - this.a1 * y;
    return y;
  }
}

/** `scipy.signal.butter(1, cutoff, fs=sampleRate)` (low-pass, bilinear with prewarping) as a filter. */
export function butterworthLowpass(cutoff: number, sampleRate: number): FirstOrderFilter {
  const warped = 4 * Math.tan((Math.PI * ((2 * cutoff) / sampleRate)) / 2);
  const pole = (4 - warped) / (4 + warped);
  const gain = warped * (1 / (4 + warped));
  return new FirstOrderFilter(gain, gain, -pole);
}

/** Matchering's `ms_to_samples`. */
export function msToSamples(ms: number, sampleRate: number): number {
  return Math.trunc(sampleRate * ms * 1e-3);
}

/** The numbers of Matchering's Hyrax limiter for a config. */
export interface HyraxShape {
  /** half width of the attack stage's centred running maximum */
  attackHalfWindow: number;
  /** length of the hold stage's trailing running maximum */
  holdWindow: number;
  /** the attack smoothing pole (run forwards and backwards, `filtfilt`) */
  attackPole: number;
  holdCutoff: number;
  releaseCutoff: number;
  /** `filtfilt`'s odd extension at each end: 3·max(len(a), len(b)) */
  padLength: number;
}

export function hyraxShape(config: MatcheringConfig): HyraxShape {
  const { limiter, internalSampleRate } = config;
  const attack = msToSamples(limiter.attack, internalSampleRate);
  const attackOdd = attack % 2 === 0 ? attack + 1 : attack;
  return {
    attackHalfWindow: attackOdd - 1,
    holdWindow: msToSamples(limiter.hold, internalSampleRate),
    attackPole: Math.exp(limiter.attackFilterCoefficient / attack),
    holdCutoff: limiter.holdFilterCoefficient,
    releaseCutoff: limiter.releaseFilterCoefficient / limiter.release,
    padLength: 6,
  };
}
