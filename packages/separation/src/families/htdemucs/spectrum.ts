import { TorchStft } from "../../stft.ts";

/**
 * HTDemucs's spectrogram convention around the exported graph: `_spec` + `_magnitude` before
 * it, `_mask` + `_ispec` after it (demucs/htdemucs.py), for one chunk of `length` samples.
 *
 * `_spec` reflect-pads the chunk by 3·hop/2 on the left and 3·hop/2 + (frames·hop − length) on
 * the right, takes a normalised, reflect-centred STFT, drops the Nyquist bin and keeps frames
 * 2 … 2 + frames − 1, where frames = ⌈length / hop⌉. `_ispec` undoes it: the Nyquist bin and two
 * frames at each side come back as zeros, the iSTFT runs to frames·hop + 3·hop samples and the
 * 3·hop/2 at the front are dropped.
 */
export class HtdemucsSpectrum {
  readonly nFft: number;
  readonly hop: number;
  /** frequency rows the graph sees: nFft / 2 */
  readonly rows: number;
  readonly length: number;
  readonly frames: number;
  readonly #stft: TorchStft;
  readonly #pad: number;
  readonly #padded: Float32Array;
  readonly #full: Float32Array;

  private constructor(stft: TorchStft, length: number) {
    this.#stft = stft;
    this.nFft = stft.nFft;
    this.hop = stft.hop;
    this.rows = stft.nFft / 2;
    this.length = length;
    this.frames = Math.ceil(length / this.hop);
    this.#pad = (this.hop / 2) * 3;
    this.#padded = new Float32Array(this.frames * this.hop + 2 * this.#pad);
    this.#full = new Float32Array(stft.bins * (this.frames + 4) * 2);
  }

  static async create(nFft: number, length: number): Promise<HtdemucsSpectrum> {
    return new HtdemucsSpectrum(await TorchStft.create({ nFft, hop: nFft / 4, normalized: true, padMode: "reflect" }), length);
  }

  /** floats per audio channel in the graph's `spec`: 2 (re, im) · rows · frames */
  get channelSize(): number {
    return 2 * this.rows * this.frames;
  }

  /**
   * `_magnitude(_spec(x))` of one audio channel into `out` at `offset`: planes [re, im], each
   * [rows][frames], which is channels 2c and 2c + 1 of the graph's `spec`.
   */
  analyze(x: Float32Array, out: Float32Array, offset: number): void {
    const { length, frames, rows } = this;
    if (x.length !== length) throw new RangeError(`expected ${length} samples, got ${x.length}`);
    const pad = this.#pad;
    const padded = this.#padded;
    // torch's reflect padding (pad < length here: the chunk is a whole training segment)
    for (let i = 0; i < padded.length; i++) {
      let j = i - pad;
      if (j < 0) j = -j;
      else if (j >= length) j = 2 * (length - 1) - j;
      padded[i] = x[j];
    }
    const spec = this.#stft.forward(padded);
    const stride = spec.frames * 2;
    const plane = rows * frames;
    for (let b = 0; b < rows; b++) {
      const src = b * stride + 4;
      const dst = offset + b * frames;
      for (let t = 0; t < frames; t++) {
        out[dst + t] = spec.data[src + 2 * t];
        out[plane + dst + t] = spec.data[src + 2 * t + 1];
      }
    }
  }

  /**
   * `_ispec(_mask(...))` of one audio channel of one stem: `spec` holds its [re, im] planes
   * at `offset` (the graph's `spec_out` layout); returns `length` samples.
   */
  synthesize(spec: Float32Array, offset: number): Float32Array {
    const { rows, frames, length } = this;
    const full = this.#full;
    full.fill(0);
    const fullFrames = frames + 4;
    const plane = rows * frames;
    for (let b = 0; b < rows; b++) {
      const dst = b * fullFrames * 2 + 4;
      const src = offset + b * frames;
      for (let t = 0; t < frames; t++) {
        full[dst + 2 * t] = spec[src + t];
        full[dst + 2 * t + 1] = spec[plane + src + t];
      }
    }
    const signal = this.#stft.inverse(full, fullFrames, frames * this.hop + 2 * this.#pad);
    return signal.subarray(this.#pad, this.#pad + length);
  }
}
