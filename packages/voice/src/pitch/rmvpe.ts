// RMVPE pitch for RVC models, as RVC runs it: a 128-bin log-mel at 16 kHz (this file), the network
// in onnxruntime (an `rmvpe.onnx`: the community's export or the one `voices import-pitch` makes
// from `rmvpe.pt`), and RVC's decoding of the 360 pitch bins (this file).
import { existsSync } from "node:fs";
import { INSTALL_RMVPE, MissingVoiceAssetError } from "../assets.ts";
import { ort } from "@mixdown/separation/ort";
import { cpuArenaEnabled } from "@mixdown/separation/allocator";
import { ComplexFft } from "@mixdown/separation/fft";

export const RMVPE_RATE = 16000;
export const RMVPE_HOP = 160;
const WINDOW = 1024;
const BINS = WINDOW / 2 + 1;
export const RMVPE_MELS = 128;
export const RMVPE_PITCH_BINS = 360;
const F_MIN = 30;
const F_MAX = 8000;
const LOG_FLOOR = 1e-5;
/** The network halves time five times: its input length is a multiple of 32 frames. */
const FRAME_MULTIPLE = 32;
/** RVC's voicing threshold on the best bin's salience. */
export const RMVPE_THRESHOLD = 0.03;

const htkMel = (hz: number) => 2595 * Math.log10(1 + hz / 700);
const htkHz = (mel: number) => 700 * (10 ** (mel / 2595) - 1);

/**
 * The mel filterbank RVC's RMVPE takes from librosa (`mel(sr=16000, n_fft=1024, n_mels=128,
 * fmin=30, fmax=8000, htk=True)`): triangles between HTK-mel-spaced edges, each scaled to unit
 * area per Hz (librosa's default "slaney" normalisation: 2 / (right edge − left edge)).
 * Row-major [mel][bin].
 */
export function rmvpeMelBasis(): Float32Array {
  const lo = htkMel(F_MIN);
  const hi = htkMel(F_MAX);
  const edges = Array.from({ length: RMVPE_MELS + 2 }, (_, i) => htkHz(lo + ((hi - lo) * i) / (RMVPE_MELS + 1)));
  const basis = new Float32Array(RMVPE_MELS * BINS);
  for (let m = 0; m < RMVPE_MELS; m++) {
    const [left, centre, right] = [edges[m]!, edges[m + 1]!, edges[m + 2]!];
    const scale = 2 / (right - left);
    for (let k = 0; k < BINS; k++) {
      const hz = (k * RMVPE_RATE) / WINDOW;
      const rising = (hz - left) / (centre - left);
      const falling = (right - hz) / (right - centre);
      basis[m * BINS + k] = Math.max(0, Math.min(rising, falling)) * scale;
    }
  }
  return basis;
}

let sharedBasis: Float32Array | undefined;

/**
 * RVC's RMVPE input: `torch.stft` (n_fft = win = 1024, hop 160, periodic Hann, centred with
 * reflection), magnitudes, the mel filterbank, `log(max(x, 1e-5))`. Returns [128][frames]
 * (row-major, `frames` = 1 + floor(length / 160)) in an array `padded` frames wide, the columns
 * after `frames` zero (RVC pads the mel with zeros to a multiple of 32 frames).
 */
export function rmvpeMel(audio: Float32Array): { mel: Float32Array; frames: number; padded: number } {
  const half = WINDOW / 2;
  if (audio.length <= half) throw new RangeError(`RMVPE needs more than ${half} samples (got ${audio.length})`);
  const basis = (sharedBasis ??= rmvpeMelBasis());
  const frames = 1 + Math.floor(audio.length / RMVPE_HOP);
  const padded = Math.ceil(frames / FRAME_MULTIPLE) * FRAME_MULTIPLE;
  const n = audio.length;
  // Reflection about the first and last sample, as torch.stft(center=True, pad_mode="reflect").
  const sample = (i: number) => audio[i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i]!;
  const window = new Float64Array(WINDOW);
  for (let i = 0; i < WINDOW; i++) window[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / WINDOW);
  const fft = new ComplexFft(WINDOW);
  const re = new Float64Array(WINDOW);
  const im = new Float64Array(WINDOW);
  const magnitude = new Float64Array(BINS);
  const mel = new Float32Array(RMVPE_MELS * padded);
  for (let t = 0; t < frames; t++) {
    const start = t * RMVPE_HOP - half;
    for (let i = 0; i < WINDOW; i++) {
      re[i] = sample(start + i) * window[i]!;
      im[i] = 0;
    }
    fft.forward(re, im);
    for (let k = 0; k < BINS; k++) magnitude[k] = Math.hypot(re[k]!, im[k]!);
    for (let m = 0; m < RMVPE_MELS; m++) {
      let sum = 0;
      const row = m * BINS;
      for (let k = 0; k < BINS; k++) {
        const w = basis[row + k]!;
        if (w !== 0) sum += w * magnitude[k]!;
      }
      mel[m * padded + t] = Math.log(Math.max(sum, LOG_FLOOR));
    }
  }
  return { mel, frames, padded };
}

/**
 * RVC's `to_local_average_cents` and `decode`: per frame, the salience-weighted mean of the cents
 * of the 9 bins around the best one (bin i = 1997.379… + 20·i cents above 10 Hz; bins beyond the
 * ends count as 0), unvoiced (0 Hz) where the best salience is ≤ `threshold`.
 * `hidden` is [frames][360] row-major.
 */
export function decodeRmvpe(hidden: Float32Array, frames: number, threshold = RMVPE_THRESHOLD): Float32Array {
  const f0 = new Float32Array(frames);
  for (let t = 0; t < frames; t++) {
    const row = t * RMVPE_PITCH_BINS;
    let best = 0;
    for (let i = 1; i < RMVPE_PITCH_BINS; i++) if (hidden[row + i]! > hidden[row + best]!) best = i;
    if (hidden[row + best]! <= threshold) continue;
    let weighted = 0;
    let total = 0;
    for (let i = Math.max(0, best - 4); i <= Math.min(RMVPE_PITCH_BINS - 1, best + 4); i++) {
      const s = hidden[row + i]!;
      weighted += s * (20 * i + 1997.3794084376191);
      total += s;
    }
    const hz = 10 * 2 ** (weighted / total / 1200);
    f0[t] = hz === 10 ? 0 : hz;
  }
  return f0;
}

/** An RMVPE network in onnxruntime: `mel` [1, 128, T] → salience [1, T, 360], T a multiple of 32. */
export class RmvpePitch {
  private constructor(private readonly session: ort.InferenceSession) {}

  static async load(path: string, sessionOptions: ort.InferenceSession.SessionOptions = {}): Promise<RmvpePitch> {
    if (!existsSync(path))
      throw new MissingVoiceAssetError(
        "rmvpe",
        `the RMVPE pitch model ${path} is missing (VOICE_RMVPE_MODEL): install it with \`${INSTALL_RMVPE}\` (or \`./mixdown.sh voices import-pitch rmvpe.pt\`), or set VOICE_PITCH_METHOD=yin`,
      );
    // Optimised to level `extended`, whatever the caller asks: at `all` onnxruntime's NCHWc
    // layout rewrite of RMVPE's convolutions keeps about 280 MB more resident for the session's
    // life (the published-size model: 846 against 568 MB after three runs of 15 s of mel frames),
    // for runs about a quarter faster, where RMVPE is about 5 % of an RVC conversion's time
    // (bench:voice's split). Its f0 is the same to 1e-6.
    const session = await ort.InferenceSession.create(path, {
      enableCpuMemArena: cpuArenaEnabled(),
      ...sessionOptions,
      graphOptimizationLevel: "extended",
    }).catch((err: Error) => {
      throw new Error(`${path} is not an RMVPE model: onnxruntime cannot load it (${err.message.split("\n")[0]})`);
    });
    const pitch = new RmvpePitch(session);
    try {
      await pitch.#salience(new Float32Array(RMVPE_MELS * FRAME_MULTIPLE), FRAME_MULTIPLE);
    } catch (err) {
      await session.release();
      throw new Error(`${path} is not an RMVPE model: ${(err as Error).message}`);
    }
    return pitch;
  }

  async #salience(mel: Float32Array, padded: number): Promise<Float32Array> {
    const out = await this.session.run({
      [this.session.inputNames[0]!]: new ort.Tensor("float32", mel, [1, RMVPE_MELS, padded]),
    });
    const hidden = out[this.session.outputNames[0]!]!;
    const [batch, frames, bins] = hidden.dims;
    if (hidden.dims.length !== 3 || batch !== 1 || frames !== padded || bins !== RMVPE_PITCH_BINS)
      throw new Error(`expected salience [1, ${padded}, ${RMVPE_PITCH_BINS}], got [${hidden.dims.join(", ")}]`);
    return hidden.data as Float32Array;
  }

  /** f0 in Hz (0 = unvoiced) of 16 kHz audio, one value per 160 samples, frame t centred on sample 160·t. */
  async track(audio: Float32Array, threshold = RMVPE_THRESHOLD): Promise<Float32Array> {
    const { mel, frames, padded } = rmvpeMel(audio);
    return decodeRmvpe(await this.#salience(mel, padded), frames, threshold);
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}
