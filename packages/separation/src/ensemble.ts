import { concatSamples } from "@mixdown/audio";
import { createRealFft, type RealFft } from "./real-fft.ts";
import type { EnsembleAlgorithm } from "./ensemble-names.ts";

/**
 * The STFT the spectral algorithms combine in: UVR's `wave_to_spectrogram_no_mp` and
 * python-audio-separator's `Ensembler._stft` both call `librosa.stft(n_fft=2048, hop_length=1024)`
 * with librosa's defaults (periodic Hann window, `center=True`, zero padding since librosa 0.9),
 * and invert with `librosa.istft` (windowed overlap-add divided by the summed squared window).
 */
export const ENSEMBLE_N_FFT = 2048;
export const ENSEMBLE_HOP = 1024;

const CHANNELS = 2;

/**
 * Combines the outputs several models gave for one stem, streamed: `push` takes one block per
 * member (interleaved stereo, all the same length, members in the order the ensemble names them)
 * and returns the frames that are final; `finish` returns the rest. What comes out adds up to as
 * many frames as went in. Memory does not grow with the stream's length: the spectral algorithms
 * keep one window (2048 frames) per member and channel.
 *
 * Each algorithm matches an upstream definition on the same input (test/ensemble.test.ts compares
 * with their Python, see test/fixtures/ensemble/README.md):
 * - `avg_wave`: sample-wise mean; python-audio-separator `Ensembler.ensemble` "avg_wave" (equal weights).
 * - `median_wave`: sample-wise median (`np.median(axis=0)`: the mean of the two middle values for
 *   an even count, so two members give their mean); audio-separator "median_wave".
 * - `min_mag` / `max_mag`: per STFT bin, the complex value of the member whose magnitude is the
 *   smallest / largest, the first member winning ties (`np.argmin` / `np.argmax`);
 *   audio-separator's "min_fft" / "max_fft", inverted to the input's length (`istft(length=)`).
 * - `avg_mag`: per bin, the complex mean; audio-separator's "avg_fft". Linear in the members, so
 *   equal to `avg_wave` up to rounding (kept for callers who name it).
 * - `uvr_max_spec` / `uvr_min_spec`: UVR's `spec_utils.ensembling` with "Max Spec" / "Min Spec"
 *   (audio-separator's "uvr_max_spec" / "uvr_min_spec"): the members folded in order, each later
 *   member replacing the running choice where its magnitude is >= (max) or <= (min), so the last
 *   member wins ties. Upstream inverts without `length=` and so drops the last `L mod 1024`
 *   samples (UVR pads them with zeros); here they are kept, as the `_fft` methods keep them.
 */
export class EnsembleMixer {
  readonly algorithm: EnsembleAlgorithm;
  readonly members: number;
  readonly #spectral: SpectralEnsemble | undefined;

  private constructor(algorithm: EnsembleAlgorithm, members: number, spectral: SpectralEnsemble | undefined) {
    this.algorithm = algorithm;
    this.members = members;
    this.#spectral = spectral;
  }

  static async create(algorithm: EnsembleAlgorithm, members: number): Promise<EnsembleMixer> {
    if (!Number.isInteger(members) || members < 2) throw new RangeError(`an ensemble needs 2 or more members, got ${members}`);
    const spectral =
      algorithm === "avg_wave" || algorithm === "median_wave"
        ? undefined
        : new SpectralEnsemble(algorithm, members, await createRealFft(ENSEMBLE_N_FFT));
    return new EnsembleMixer(algorithm, members, spectral);
  }

  push(blocks: readonly Float32Array[]): Float32Array {
    if (blocks.length !== this.members) throw new RangeError(`expected ${this.members} blocks, got ${blocks.length}`);
    const length = blocks[0]!.length;
    if (length % CHANNELS !== 0) throw new RangeError("blocks must be interleaved stereo");
    for (const b of blocks) if (b.length !== length) throw new RangeError("every member's block must have the same length");
    if (this.#spectral) return this.#spectral.push(blocks);
    return this.algorithm === "avg_wave" ? average(blocks) : median(blocks);
  }

  finish(): Float32Array {
    return this.#spectral ? this.#spectral.finish() : new Float32Array(0);
  }

  /** Bytes of the buffers it keeps between calls (what "flat in the stream's length" is checked on). */
  get heldBytes(): number {
    return this.#spectral?.heldBytes ?? 0;
  }
}

function average(blocks: readonly Float32Array[]): Float32Array {
  const out = new Float32Array(blocks[0]!.length);
  const n = blocks.length;
  for (let i = 0; i < out.length; i++) {
    let sum = 0;
    for (let m = 0; m < n; m++) sum += blocks[m]![i]!;
    out[i] = sum / n;
  }
  return out;
}

function median(blocks: readonly Float32Array[]): Float32Array {
  const out = new Float32Array(blocks[0]!.length);
  const n = blocks.length;
  const values = new Float64Array(n);
  const mid = n >> 1;
  for (let i = 0; i < out.length; i++) {
    for (let m = 0; m < n; m++) values[m] = blocks[m]![i]!;
    values.sort();
    out[i] = n % 2 === 1 ? values[mid]! : (values[mid - 1]! + values[mid]!) / 2;
  }
  return out;
}

/**
 * The spectral algorithms as a streaming librosa.stft -> combine -> librosa.istft. Positions are
 * counted in the padded signal (`ENSEMBLE_N_FFT / 2` zeros, then the stream, then zeros): frame f
 * reads padded samples [f·hop, f·hop + n_fft), and once it is overlap-added every padded sample
 * before (f + 1)·hop is final.
 */
class SpectralEnsemble {
  readonly #algorithm: EnsembleAlgorithm;
  readonly #members: number;
  readonly #fft: RealFft;
  readonly #window = new Float32Array(ENSEMBLE_N_FFT);
  /** per member and channel: padded samples from #inStart on */
  readonly #input: Float32Array[][];
  #inStart = 0;
  #inLength = ENSEMBLE_N_FFT / 2; // the leading zeros
  /** per channel: overlap-added output, and the summed squared window, from #olaStart on */
  readonly #ola: Float64Array[];
  readonly #envelope: Float64Array;
  #olaStart = 0;
  /** the next frame to compute */
  #frame = 0;
  /** stream frames received, and emitted (output position 0 is padded position n_fft/2) */
  #received = 0;
  #emitted = 0;
  readonly #spectra: Float32Array[];
  readonly #combined = new Float32Array(ENSEMBLE_N_FFT);

  constructor(algorithm: EnsembleAlgorithm, members: number, fft: RealFft) {
    this.#algorithm = algorithm;
    this.#members = members;
    this.#fft = fft;
    const n = ENSEMBLE_N_FFT;
    for (let i = 0; i < n; i++) this.#window[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / n); // scipy hann, fftbins=True
    this.#input = Array.from({ length: members }, () => Array.from({ length: CHANNELS }, () => new Float32Array(4 * n)));
    this.#ola = Array.from({ length: CHANNELS }, () => new Float64Array(2 * n));
    this.#envelope = new Float64Array(2 * n);
    this.#spectra = Array.from({ length: members }, () => new Float32Array(n));
  }

  get heldBytes(): number {
    let bytes = this.#envelope.byteLength;
    for (const channels of this.#input) for (const x of channels) bytes += x.byteLength;
    for (const ola of this.#ola) bytes += ola.byteLength;
    return bytes;
  }

  push(blocks: readonly Float32Array[]): Float32Array {
    const frames = blocks[0]!.length / CHANNELS;
    const pieces: Float32Array[] = [];
    // a hop at a time, so what is held stays one window whatever the block size
    for (let at = 0; at < frames; at += ENSEMBLE_HOP) {
      const end = Math.min(frames, at + ENSEMBLE_HOP);
      this.#append(
        blocks.map((b) => b.subarray(at * CHANNELS, end * CHANNELS)),
        end - at,
      );
      this.#received += end - at;
      // the frames whose window lies wholly inside what has arrived
      const padded = ENSEMBLE_N_FFT / 2 + this.#received;
      while (this.#frame * ENSEMBLE_HOP + ENSEMBLE_N_FFT <= padded) pieces.push(this.#computeFrame(this.#received));
    }
    return concatSamples(pieces, (n) => new Float32Array(n));
  }

  finish(): Float32Array {
    // librosa's frame count with center=True; the last windows read the trailing zeros
    const total = 1 + Math.floor(this.#received / ENSEMBLE_HOP);
    const zeros = Array.from({ length: this.#members }, () => new Float32Array(ENSEMBLE_N_FFT * CHANNELS));
    this.#append(zeros, ENSEMBLE_N_FFT);
    const pieces: Float32Array[] = [];
    while (this.#frame < total) pieces.push(this.#computeFrame(this.#received));
    // the stream's last samples lie only under frames already added: final now
    pieces.push(this.#emit(this.#received));
    return concatSamples(pieces, (n) => new Float32Array(n));
  }

  #append(blocks: readonly Float32Array[], frames: number): void {
    const needed = this.#inLength + frames;
    for (let m = 0; m < this.#members; m++) {
      const block = blocks[m]!;
      for (let c = 0; c < CHANNELS; c++) {
        let buffer = this.#input[m]![c]!;
        if (buffer.length < needed) {
          const grown = new Float32Array(Math.max(needed, 2 * buffer.length));
          grown.set(buffer.subarray(0, this.#inLength));
          this.#input[m]![c] = buffer = grown;
        }
        for (let i = 0; i < frames; i++) buffer[this.#inLength + i] = block[i * CHANNELS + c]!;
      }
    }
    this.#inLength = needed;
  }

  /** Computes the next frame and returns the output it made final (up to stream position `limit`). */
  #computeFrame(limit: number): Float32Array {
    const n = ENSEMBLE_N_FFT;
    const start = this.#frame * ENSEMBLE_HOP;
    const offset = start - this.#inStart;
    const olaOffset = start - this.#olaStart;
    const window = this.#window;
    const fft = this.#fft;
    for (let c = 0; c < CHANNELS; c++) {
      for (let m = 0; m < this.#members; m++) {
        const x = this.#input[m]![c]!;
        const time = fft.time;
        for (let i = 0; i < n; i++) time[i] = x[offset + i]! * window[i]!;
        fft.forward();
        this.#spectra[m]!.set(fft.spectrum);
      }
      this.#combine();
      fft.spectrum.set(this.#combined);
      fft.inverse();
      const time = fft.time;
      const ola = this.#ola[c]!;
      for (let i = 0; i < n; i++) ola[olaOffset + i]! += (time[i]! / n) * window[i]!;
    }
    for (let i = 0; i < n; i++) this.#envelope[olaOffset + i]! += window[i]! * window[i]!;
    this.#frame++;
    // the next frame starts one hop on: what lies before it is read no more
    const drop = this.#frame * ENSEMBLE_HOP - this.#inStart;
    if (drop > 0 && drop <= this.#inLength) {
      for (const channels of this.#input) for (const x of channels) x.copyWithin(0, drop, this.#inLength);
      this.#inStart += drop;
      this.#inLength -= drop;
    }
    return this.#emit(Math.min(limit, this.#frame * ENSEMBLE_HOP - ENSEMBLE_N_FFT / 2));
  }

  /** Per bin, in RealFft's packed layout: [re0, re(N/2), re1, im1, ...]; bins 0 and N/2 are real. */
  #combine(): void {
    const spectra = this.#spectra;
    const out = this.#combined;
    const members = this.#members;
    const n = ENSEMBLE_N_FFT;
    if (this.#algorithm === "avg_mag") {
      for (let i = 0; i < n; i++) {
        let sum = 0;
        for (let m = 0; m < members; m++) sum += spectra[m]![i]!;
        out[i] = sum / members;
      }
      return;
    }
    const pick = (chosen: number, i: number, width: 1 | 2) => {
      out[i] = spectra[chosen]![i]!;
      if (width === 2) out[i + 1] = spectra[chosen]![i + 1]!;
    };
    const magnitude = (m: number, i: number, width: 1 | 2) => {
      const re = spectra[m]![i]!;
      if (width === 1) return Math.abs(re);
      const im = spectra[m]![i + 1]!;
      return Math.sqrt(re * re + im * im);
    };
    const select = (i: number, width: 1 | 2) => {
      let chosen = 0;
      let best = magnitude(0, i, width);
      for (let m = 1; m < members; m++) {
        const mag = magnitude(m, i, width);
        let take: boolean;
        switch (this.#algorithm) {
          case "min_mag": // np.argmin: the first of equals stays
            take = mag < best;
            break;
          case "max_mag":
            take = mag > best;
            break;
          case "uvr_min_spec": // np.where(|x_i| <= |acc|, x_i, acc): a later equal replaces
            take = mag <= best;
            break;
          default: // uvr_max_spec
            take = mag >= best;
        }
        if (take) {
          chosen = m;
          best = mag;
        }
      }
      pick(chosen, i, width);
    };
    select(0, 1);
    select(1, 1);
    for (let i = 2; i < n; i += 2) select(i, 2);
  }

  /** The output samples before stream position `end` not yet returned, divided by the window envelope. */
  #emit(end: number): Float32Array {
    const from = this.#emitted;
    const count = Math.max(0, end - from);
    const out = new Float32Array(count * CHANNELS);
    const base = from + ENSEMBLE_N_FFT / 2 - this.#olaStart;
    for (let i = 0; i < count; i++) {
      const e = this.#envelope[base + i]!;
      for (let c = 0; c < CHANNELS; c++) out[i * CHANNELS + c] = e > 0 ? this.#ola[c]![base + i]! / e : this.#ola[c]![base + i]!;
    }
    this.#emitted += count;
    // keep the accumulators from the next frame's start on (what is before it is final and emitted)
    const keepFrom = Math.min(this.#emitted + ENSEMBLE_N_FFT / 2, this.#frame * ENSEMBLE_HOP);
    const drop = keepFrom - this.#olaStart;
    if (drop > 0) {
      const live = 2 * ENSEMBLE_N_FFT;
      for (const ola of this.#ola) {
        ola.copyWithin(0, drop, live);
        ola.fill(0, live - drop);
      }
      this.#envelope.copyWithin(0, drop, live);
      this.#envelope.fill(0, live - drop);
      this.#olaStart += drop;
    }
    return out;
  }
}
