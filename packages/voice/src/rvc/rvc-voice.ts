import { ort } from "@mixdown/separation/ort";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { cpuArenaEnabled } from "@mixdown/separation/allocator";
import { INSTALL_CONTENTVEC, MissingVoiceAssetError } from "../assets.ts";
import { inspectVoiceModelFile, VoiceModelFileError } from "../model-file.ts";
import { RmvpePitch } from "../pitch/rmvpe.ts";
import { nsfSource } from "./nsf-source.ts";
import { trackPitch } from "../pitch/yin.ts";
import { IndexRetrieval } from "./index-retrieval.ts";
import type { ConversionControls, MonoSource, VoiceEngine } from "../voice-engine.ts";

export interface RvcStageTimes {
  contentVec: number;
  /** RMVPE or YIN, and the f0 shift. */
  pitch: number;
  /** Index retrieval, protect and the ×2 repetition of the features. */
  index: number;
  /** The synthesizer, with the NSF excitation and the noise it draws. */
  synthesizer: number;
}

export interface RvcEngineOptions {
  modelPath: string;
  contentVecPath: string;
  /** The model's output rate (40 or 48 kHz for RVC v2). */
  sampleRate: number;
  /** An RMVPE ONNX model (`mel` [1,128,T] -> [1,T,360]): f0 by RMVPE; without it, by YIN. */
  rmvpePath?: string;
  /** RVC's feature index (faiss IVF-Flat `.index`) trained with the model; optional. */
  indexPath?: string;
  /**
   * RVC's `protect`: below 0.5, unvoiced frames keep this share of the retrieved features and the
   * rest of their own (consonants stay intelligible); 0.5 or more turns it off. RVC's default 0.33.
   */
  protect?: number;
  /**
   * Longest piece sent to the model at once (default 10 s); cuts fall on the quietest 10 ms
   * nearby. A piece's synthesizer run holds about 35 MB a second of it: on real-size models 10 s
   * peaked 2224 MB where 20 s peaked 2698 (1926 and 2215 on jemalloc), for 5-9 % more time
   * (docs/voice.md).
   */
  segmentSeconds?: number;
  sessionOptions?: ort.InferenceSession.SessionOptions;
}

const RATE = 16000;
/** One f0/feature frame: 10 ms at 16 kHz. */
const FRAME = 160;
/** Context added on each side of a piece and dropped from its output (a multiple of FRAME). */
const PAD = 8000;
const F0_MIN = 50;
const F0_MAX = 1100;
const MEL_MIN = 1127 * Math.log(1 + F0_MIN / 700);
const MEL_MAX = 1127 * Math.log(1 + F0_MAX / 700);

/** RVC's coarse pitch: mel-scale f0 quantised to 1..255, 1 for unvoiced frames. */
export function coarsePitch(f0: Float32Array): BigInt64Array {
  const out = new BigInt64Array(f0.length);
  for (let i = 0; i < f0.length; i++) {
    const hz = f0[i]!;
    let mel = hz > 0 ? 1127 * Math.log(1 + hz / 700) : 0;
    if (mel > 0) mel = ((mel - MEL_MIN) * 254) / (MEL_MAX - MEL_MIN) + 1;
    out[i] = BigInt(Math.min(255, Math.max(1, Math.round(mel))));
  }
  return out;
}

/**
 * The synthesizer's `phone` input, as RVC's pipeline makes it: ContentVec's frames (50/s, `dim`
 * wide) blended with their retrieved neighbours at `rate` when there is an index, each repeated
 * twice to 100 frames/s (one per `pitchf` value, the last one held if ContentVec gave fewer);
 * with protect < 0.5 a frame whose f0 is below 1 Hz (unvoiced) takes `protect` of the blended
 * features and the rest of its own.
 */
export async function rvcPhone(
  own: Float32Array,
  dim: number,
  pitchf: Float32Array,
  retrieval: Pick<IndexRetrieval, "blend"> | undefined,
  rate: number,
  protect: number,
): Promise<Float32Array> {
  const vecFrames = own.length / dim;
  const frames = pitchf.length;
  const features = retrieval && rate > 0 ? await retrieval.blend(own, rate) : own;
  const mix = features !== own && protect < 0.5 ? protect : 1;
  const phone = new Float32Array(frames * dim);
  for (let t = 0; t < frames; t++) {
    const src = Math.min(vecFrames - 1, t >> 1) * dim;
    const at = t * dim;
    if (mix === 1 || pitchf[t]! >= 1) phone.set(features.subarray(src, src + dim), at);
    else for (let j = 0; j < dim; j++) phone[at + j] = features[src + j]! * mix + own[src + j]! * (1 - mix);
  }
  return phone;
}

function gaussian(count: number): Float32Array {
  const out = new Float32Array(count);
  for (let i = 0; i < count; i += 2) {
    const u = Math.max(1e-12, Math.random());
    const v = Math.random();
    const r = Math.sqrt(-2 * Math.log(u));
    out[i] = r * Math.cos(2 * Math.PI * v);
    if (i + 1 < count) out[i + 1] = r * Math.sin(2 * Math.PI * v);
  }
  return out;
}

/**
 * RVC v2 ONNX inference: ContentVec features (with an index: blended with their 8 nearest
 * training features at index rate = conversionStrength, protect on unvoiced frames; repeated ×2
 * in time to 100 frames/s), YIN f0 times 2^(pitchShift/12) as `pitchf` and its coarse form as
 * `pitch`, speaker 0, Gaussian `rnd`. The f0 is RMVPE's when an RMVPE model is given, else YIN's.
 * Long inputs go in pieces cut at quiet points, each with PAD of real context (or silence) on
 * both sides that is dropped from the output.
 */
export class RvcVoiceEngine implements VoiceEngine {
  readonly architecture = "rvc" as const;
  readonly sampleRate = RATE;
  readonly shiftsPitch = true;
  readonly outputSampleRate: number;
  /** Milliseconds spent per stage over this engine's conversions (for benchmarks). */
  readonly timings: RvcStageTimes = { contentVec: 0, pitch: 0, index: 0, synthesizer: 0 };
  readonly #segment: number;
  readonly #protect: number;
  /** `mixdown`: a converted `.pth` (the excitation computed here); `export`: RVC's own ONNX export. */
  readonly #graph: "export" | "mixdown" | "mixdown-no-f0";
  /** Channels of the prior's noise input `rnd`. */
  readonly #noiseChannels: number;
  /** Feature width the model takes (768: v2, ContentVec layer 12; 256: v1, layer 9 + projection), when it says. */
  readonly #phoneWidth: number | undefined;

  private constructor(
    private readonly model: ort.InferenceSession,
    private readonly contentVec: ort.InferenceSession,
    private readonly retrieval: IndexRetrieval | undefined,
    private readonly rmvpe: RmvpePitch | undefined,
    options: RvcEngineOptions,
    graph: { kind: "export" | "mixdown" | "mixdown-no-f0"; noiseChannels: number; phoneWidth?: number },
  ) {
    this.#phoneWidth = graph.phoneWidth;
    this.#graph = graph.kind;
    this.#noiseChannels = graph.noiseChannels;
    this.outputSampleRate = options.sampleRate;
    this.#protect = options.protect ?? 0.33;
    this.#segment = Math.round(((options.segmentSeconds ?? 10) * RATE) / FRAME) * FRAME;
  }

  static async load(options: RvcEngineOptions): Promise<RvcVoiceEngine> {
    // No memory pattern: from the second run of a shape (pieces of one length recur on long input)
    // onnxruntime allocates the planned block for the whole run at once, and the arena then kept
    // it beside the first run's (peak RSS stepped from 3.1 to 4.3 GB at the third 15 s piece).
    // The CPU arena stays on under glibc: without it every run maps its memory afresh, and a
    // conversion took 10.3 core-seconds per second of audio instead of 2.1 (bench:voice --seconds
    // 30, 2026-11-26: peak RSS 2450 MB without the arena, 2789 MB with it). On jemalloc (see
    // @mixdown/separation's allocator.ts) it is off: the four sessions share one run's memory.
    const session = {
      graphOptimizationLevel: "all" as const,
      enableCpuMemArena: cpuArenaEnabled(),
      enableMemPattern: false,
      ...options.sessionOptions,
    };
    if ((options.sampleRate * FRAME) % RATE !== 0) throw new Error(`unsupported RVC sample rate ${options.sampleRate}`);
    if (!existsSync(options.contentVecPath))
      throw new MissingVoiceAssetError(
        "contentvec",
        `RVC models need the ContentVec model ${options.contentVecPath} (VOICE_CONTENTVEC_MODEL: vec-768-layer-12.onnx for v2 models; VOICE_CONTENTVEC_V1_MODEL: vec-256-layer-9.onnx for v1), which is missing: install it with \`${INSTALL_CONTENTVEC}\``,
      );
    const info = inspectVoiceModelFile(await readFile(options.modelPath));
    if (info.architecture !== "rvc") throw new Error(`${options.modelPath} is not an RVC model`);
    const rndChannels = info.inputs.find((i) => i.name === "rnd")?.dims[1];
    const phoneWidth = info.inputs.find((i) => i.name === "phone")?.dims[2];
    const graph = {
      kind: info.rvcGraph ?? "export",
      noiseChannels: typeof rndChannels === "number" ? rndChannels : 192,
      ...(typeof phoneWidth === "number" ? { phoneWidth } : {}),
    };
    // One after another: creating a session optimises its graph in memory it frees afterwards,
    // which the next creation can reuse; created together, the four peaks add up and stay resident
    // (the four real-size sessions alone: 1.75 GB RSS created together, 1.16 GB one by one).
    const opened: Array<() => Promise<void>> = [];
    try {
      const model = await ort.InferenceSession.create(options.modelPath, session);
      opened.push(() => model.release());
      const contentVec = await ort.InferenceSession.create(options.contentVecPath, session);
      opened.push(() => contentVec.release());
      const retrieval = options.indexPath ? await IndexRetrieval.load(options.indexPath, session) : undefined;
      if (retrieval) opened.push(() => retrieval.close());
      const rmvpe = options.rmvpePath ? await RmvpePitch.load(options.rmvpePath, session) : undefined;
      return new RvcVoiceEngine(model, contentVec, retrieval, rmvpe, options, graph);
    } catch (err) {
      await Promise.allSettled(opened.map((release) => release()));
      throw err;
    }
  }

  async *convert(source: MonoSource, controls: ConversionControls): AsyncGenerator<Float32Array> {
    let buf = new Float32Array(this.#segment * 2 + 2 * PAD);
    let bufStart = 0; // absolute index of buf[0]
    let bufLen = 0;
    let segStart = 0;
    const search = 5 * RATE;
    const at = (abs: number) => buf[abs - bufStart]!;

    const take = (from: number, to: number): Float32Array => {
      const out = new Float32Array(to - from);
      for (let i = Math.max(from, bufStart); i < Math.min(to, bufStart + bufLen); i++) out[i - from] = at(i);
      return out;
    };

    const quietestCut = (lo: number, hi: number): number => {
      let best = hi;
      let bestEnergy = Number.POSITIVE_INFINITY;
      for (let c = Math.ceil(lo / FRAME) * FRAME; c + FRAME <= hi; c += FRAME) {
        let e = 0;
        for (let i = c - FRAME; i < c + FRAME; i++) e += at(i) ** 2;
        if (e < bestEnergy) {
          bestEnergy = e;
          best = c;
        }
      }
      return best;
    };

    for await (const block of source()) {
      if (bufLen + block.length > buf.length) {
        const grown = new Float32Array(Math.max(buf.length * 2, bufLen + block.length));
        grown.set(buf.subarray(0, bufLen));
        buf = grown;
      }
      buf.set(block, bufLen);
      bufLen += block.length;
      while (bufStart + bufLen >= segStart + this.#segment + PAD) {
        const cut = quietestCut(segStart + this.#segment - search, segStart + this.#segment);
        yield await this.#piece(take(segStart - PAD, cut + PAD), cut - segStart, controls);
        segStart = cut;
        const drop = segStart - PAD - bufStart;
        if (drop > 0) {
          buf.copyWithin(0, drop, bufLen);
          bufLen -= drop;
          bufStart += drop;
        }
      }
    }
    const end = bufStart + bufLen;
    if (end > segStart) yield await this.#piece(take(segStart - PAD, end + PAD), end - segStart, controls);
  }

  /** `audio` holds PAD + length + PAD samples at 16 kHz; returns the length's output at the model's rate. */
  async #piece(audio: Float32Array, length: number, controls: ConversionControls): Promise<Float32Array> {
    const frames = Math.ceil((PAD * 2 + length) / FRAME);
    const input = new Float32Array(frames * FRAME);
    input.set(audio.subarray(0, input.length));

    let t = performance.now();
    const lap = (stage: keyof RvcStageTimes) => {
      const now = performance.now();
      this.timings[stage] += now - t;
      t = now;
    };
    const vec = await this.contentVec.run({
      [this.contentVec.inputNames[0]!]: new ort.Tensor("float32", input, [1, 1, input.length]),
    });
    const embed = vec[this.contentVec.outputNames[0]!]!;
    const dim = embed.dims[2]!;
    const own = embed.data as Float32Array;

    const ratio = 2 ** (controls.pitchShift / 12);
    lap("contentVec");
    // A model trained without f0 takes none (and RVC applies no protect to it).
    const withoutF0 = this.#graph === "mixdown-no-f0";
    const f0 = withoutF0
      ? new Float32Array(frames)
      : (this.rmvpe
          ? await this.rmvpe.track(input)
          : trackPitch(input, RATE, { hop: FRAME, fMin: F0_MIN, fMax: F0_MAX })
        ).subarray(0, frames);
    const pitchf = new Float32Array(frames);
    for (let t = 0; t < frames; t++) pitchf[t] = Math.min(F0_MAX * 2, f0[t]! * ratio);

    if (this.#phoneWidth !== undefined && this.#phoneWidth !== dim)
      throw new VoiceModelFileError(
        `the voice model takes ${this.#phoneWidth}-d features but the ContentVec model gives ${dim}-d${this.#phoneWidth === 256 ? " (an RVC v1 model needs vec-256-layer-9.onnx, VOICE_CONTENTVEC_V1_MODEL)" : ""}`,
      );
    const retrieval = this.retrieval;
    if (retrieval && retrieval.index.dim !== dim)
      throw new Error(`the voice model's index holds ${retrieval.index.dim}-d features, the ContentVec model gives ${dim}-d`);
    lap("pitch");
    const phone = await rvcPhone(own, dim, pitchf, retrieval, controls.conversionStrength, withoutF0 ? 0.5 : this.#protect);
    lap("index");

    const hop = this.outputSampleRate / 100;
    const noise = gaussian(this.#noiseChannels * frames);
    const out =
      this.#graph === "mixdown-no-f0"
        ? await this.model.run({
            phone: new ort.Tensor("float32", phone, [1, frames, dim]),
            rnd: new ort.Tensor("float32", noise, [1, this.#noiseChannels, frames]),
            sid: new ort.Tensor("int64", BigInt64Array.of(0n), [1]),
          })
        : this.#graph === "mixdown"
          ? await this.model.run({
              phone: new ort.Tensor("float32", phone, [1, frames, dim]),
              pitch: new ort.Tensor("int64", coarsePitch(pitchf), [1, frames]),
              rnd: new ort.Tensor("float32", noise, [1, this.#noiseChannels, frames]),
              sid: new ort.Tensor("int64", BigInt64Array.of(0n), [1]),
              source: new ort.Tensor("float32", nsfSource(pitchf, this.outputSampleRate, hop, gaussian(frames * hop)), [
                1,
                1,
                frames * hop,
              ]),
            })
          : await this.model.run({
              phone: new ort.Tensor("float32", phone, [1, frames, dim]),
              phone_lengths: new ort.Tensor("int64", BigInt64Array.of(BigInt(frames)), [1]),
              pitch: new ort.Tensor("int64", coarsePitch(pitchf), [1, frames]),
              pitchf: new ort.Tensor("float32", pitchf, [1, frames]),
              ds: new ort.Tensor("int64", BigInt64Array.of(0n), [1]),
              rnd: new ort.Tensor("float32", noise, [1, this.#noiseChannels, frames]),
            });
    lap("synthesizer");
    const audioOut = out.audio!.data as Float32Array;
    const r = this.outputSampleRate / RATE;
    const hopOut = FRAME * r;
    if (audioOut.length < frames * hopOut - hopOut) {
      throw new Error(`the RVC model returned ${audioOut.length} samples for ${frames} frames (expected ${frames * hopOut})`);
    }
    const start = PAD * r;
    const n = Math.round(length * r);
    const piece = new Float32Array(n);
    piece.set(audioOut.subarray(start, Math.min(audioOut.length, start + n)));

    // modelVolumeMix as RVC's RMS mix: 1 keeps the model's loudness, 0 imposes the input's.
    // conversionStrength is the index rate when the model has an index; without one it blends the
    // converted voice with the input.
    const strength = retrieval ? 1 : controls.conversionStrength;
    for (let f = 0; f * hopOut < n; f++) {
      let inE = 0;
      let outE = 0;
      for (let i = 0; i < FRAME; i++) inE += (input[PAD + f * FRAME + i] ?? 0) ** 2;
      for (let i = 0; i < hopOut && f * hopOut + i < n; i++) outE += piece[f * hopOut + i]! ** 2;
      const rmsIn = Math.sqrt(inE / FRAME);
      const rmsOut = Math.sqrt(outE / hopOut);
      const gain = rmsOut > 1e-6 ? Math.min(30, (Math.max(rmsIn, 1e-6) / rmsOut) ** (1 - controls.modelVolumeMix)) : 1;
      for (let i = 0; i < hopOut && f * hopOut + i < n; i++) {
        const j = f * hopOut + i;
        const x = input[PAD + Math.floor(j / r)] ?? 0;
        piece[j] = strength * piece[j]! * gain + (1 - strength) * x;
      }
    }
    return piece;
  }

  async close(): Promise<void> {
    await Promise.all([this.model.release(), this.contentVec.release(), this.retrieval?.close(), this.rmvpe?.close()]);
  }
}
