import { createRealFft, type RealFft } from "./real-fft.ts";

/**
 * torch.stft / torch.istft as the PyTorch separation models call them: a
 * periodic Hann window as long as n_fft, `center=True` (the signal padded by
 * n_fft/2 on each side, by reflection or with zeros), onesided, optionally
 * `normalized` (scaled by 1/√n_fft). Families whose graphs leave the STFT
 * outside (HTDemucs, the RoFormers, MDX23C) compute it here, so their inputs
 * are what the upstream model sees.
 */
export interface TorchStftConfig {
  nFft: number;
  hop: number;
  /** torch.stft(normalized=...) */
  normalized?: boolean;
  /** how `center=True` pads: torch's default is reflect */
  padMode?: "reflect" | "constant";
}

/** A spectrogram laid out [bins][frames][2] (re, im), as torch.view_as_real(torch.stft(...)). */
export interface TorchSpectrum {
  data: Float32Array;
  bins: number;
  frames: number;
}

export class TorchStft {
  readonly nFft: number;
  readonly hop: number;
  readonly bins: number;
  readonly normalized: boolean;
  readonly padMode: "reflect" | "constant";
  readonly window: Float32Array;
  readonly #fft: RealFft;

  private constructor(config: Required<TorchStftConfig>, fft: RealFft) {
    this.nFft = config.nFft;
    this.hop = config.hop;
    this.normalized = config.normalized;
    this.padMode = config.padMode;
    this.bins = config.nFft / 2 + 1;
    this.#fft = fft;
    // torch.hann_window(n, periodic=True)
    this.window = new Float32Array(config.nFft);
    for (let i = 0; i < config.nFft; i++) this.window[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / config.nFft);
  }

  static async create(config: TorchStftConfig): Promise<TorchStft> {
    const { nFft, hop } = config;
    if (!Number.isInteger(nFft) || nFft < 2 || nFft % 2 !== 0)
      throw new RangeError(`nFft must be an even integer ≥ 2, got ${nFft}`);
    if (!Number.isInteger(hop) || hop < 1 || hop > nFft) throw new RangeError(`hop must be an integer in 1..${nFft}, got ${hop}`);
    const fft = await createRealFft(nFft);
    return new TorchStft({ nFft, hop, normalized: config.normalized ?? false, padMode: config.padMode ?? "reflect" }, fft);
  }

  /** Frames torch.stft(center=True) gives for `length` samples. */
  framesFor(length: number): number {
    return 1 + Math.floor(length / this.hop);
  }

  /** torch.stft of one channel. */
  forward(x: Float32Array): TorchSpectrum {
    const { nFft, hop, bins, window } = this;
    const pad = nFft / 2;
    const length = x.length;
    if (this.padMode === "reflect" && length <= pad)
      throw new RangeError(`reflect padding needs more than ${pad} samples, got ${length}`);
    const frames = this.framesFor(length);
    const data = new Float32Array(bins * frames * 2);
    const fft = this.#fft;
    const time = fft.time;
    const spectrum = fft.spectrum;
    const scale = this.normalized ? 1 / Math.sqrt(nFft) : 1;
    const reflect = this.padMode === "reflect";
    for (let f = 0; f < frames; f++) {
      const start = f * hop - pad;
      for (let i = 0; i < nFft; i++) {
        let j = start + i;
        let v: number;
        if (j >= 0 && j < length) v = x[j];
        else if (!reflect) v = 0;
        else {
          j = j < 0 ? -j : 2 * (length - 1) - j;
          v = x[j];
        }
        time[i] = v * window[i];
      }
      fft.forward();
      // packed order: [re0, re(N/2), re1, im1, ...]
      const stride = frames * 2;
      data[f * 2] = spectrum[0] * scale;
      data[f * 2 + 1] = 0;
      data[(bins - 1) * stride + f * 2] = spectrum[1] * scale;
      data[(bins - 1) * stride + f * 2 + 1] = 0;
      for (let k = 1; k < bins - 1; k++) {
        data[k * stride + f * 2] = spectrum[2 * k] * scale;
        data[k * stride + f * 2 + 1] = spectrum[2 * k + 1] * scale;
      }
    }
    return { data, bins, frames };
  }

  /**
   * torch.istft(center=True, length=length) of one channel laid out as
   * `forward` returns it. The imaginary parts of the DC and Nyquist bins are
   * ignored, as a onesided inverse does.
   */
  inverse(spec: Float32Array, frames: number, length: number): Float32Array {
    const { nFft, hop, bins, window } = this;
    if (spec.length !== bins * frames * 2) throw new RangeError(`expected ${bins * frames * 2} floats, got ${spec.length}`);
    const pad = nFft / 2;
    const total = nFft + hop * (frames - 1);
    const sum = new Float64Array(total);
    const envelope = new Float64Array(total);
    const fft = this.#fft;
    const time = fft.time;
    const spectrum = fft.spectrum;
    const scale = (this.normalized ? Math.sqrt(nFft) : 1) / nFft;
    const stride = frames * 2;
    for (let f = 0; f < frames; f++) {
      spectrum[0] = spec[f * 2];
      spectrum[1] = spec[(bins - 1) * stride + f * 2];
      for (let k = 1; k < bins - 1; k++) {
        spectrum[2 * k] = spec[k * stride + f * 2];
        spectrum[2 * k + 1] = spec[k * stride + f * 2 + 1];
      }
      fft.inverse();
      const offset = f * hop;
      for (let i = 0; i < nFft; i++) {
        sum[offset + i] += time[i] * scale * window[i];
        envelope[offset + i] += window[i] * window[i];
      }
    }
    const out = new Float32Array(length);
    const end = Math.min(length, total - pad);
    for (let i = 0; i < end; i++) {
      const e = envelope[pad + i];
      if (e < 1e-11) throw new RangeError(`the window envelope vanishes at sample ${i} (hop ${hop} too large for n_fft ${nFft})`);
      out[i] = sum[pad + i] / e;
    }
    return out;
  }
}
