import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import {
  AudioDecodeError,
  countDecodedFrames,
  decodeToPcm,
  prepareFfmpeg,
  probeAudio,
  StereoPcmEncoder,
  type AudioProbe,
  type EncodeTarget,
  type WavSampleFormat,
} from "@mixdown/audio";
import type { FamilyModel } from "./families/family.ts";
import { readsInputOnce, type SeparationManifest } from "./families/index.ts";
import { emptyTimings, selectStems, separateStream, type SeparationProgress } from "./separate-stream.ts";
import { splitStemStream, type StemSplit } from "./split-stream.ts";

export type OutputFormat = "wav" | "flac" | "mp3";

/**
 * One format every stem is written in. A lossless one may have a `sampleRate` of its own (the
 * job's asked rate), else it is written at the input's rate; mp3 always is.
 */
export type OutputSpec =
  | { format: "wav"; /** default f32 */ sampleFormat?: WavSampleFormat; sampleRate?: number }
  | {
      format: "flac";
      /** default 24 */ bitDepth?: 16 | 24;
      /** 0-12, default ffmpeg's (5) */ compressionLevel?: number;
      sampleRate?: number;
    }
  | { format: "mp3"; /** default 320 */ bitrateKbps?: number };

export interface SeparateFileOptions {
  inputPath: string;
  /** the input's probe, when the caller has it (saves an ffprobe run, and a count for a stream) */
  probe?: AudioProbe;
  /** a loaded model of any family (ModelRegistry.load) */
  model: FamilyModel<SeparationManifest>;
  /** created if missing; files are `<stem>.<format>` */
  outDir: string;
  /** one file per stem and entry, all written in the same pass; default [{ format: 'wav' }] */
  outputs?: OutputSpec[];
  /** subset of the model's stems; default all (see outputStemNames) */
  stems?: string[];
  /**
   * A second model over one of `stems` in the same pass (splitStemStream): its stems and the
   * remainder are written beside the first model's. Its family must read its input once.
   */
  split?: StemSplit;
  batchSize?: number;
  overlap?: number;
  /** HTDemucs: demucs's random-offset averaging (see SeparateStreamOptions.shifts) */
  shifts?: number;
  /** share the STFT work with a helper thread (default: when the machine has 2+ cores) */
  helperThread?: boolean;
  onProgress?: (progress: SeparationProgress) => void;
  signal?: AbortSignal;
}

export interface FileSeparationTimings {
  /** waiting for decoded audio */
  decodeMs: number;
  /** onnxruntime running; overlaps decoding, post-processing and encoding */
  inferenceMs: number;
  /** the calling thread idle, waiting for onnxruntime */
  inferenceWaitMs: number;
  /** STFT, iSTFT, overlap-add, stem arithmetic */
  postMs: number;
  /** waiting for the encoders (backpressure and the final flush) */
  encodeMs: number;
  /** wall time of the whole call, probe included */
  totalMs: number;
  /** the split model's share, when there is one (its onnxruntime time, its idle wait, its STFT work) */
  split?: { inferenceMs: number; inferenceWaitMs: number; postMs: number };
}

export interface SeparateFileResult {
  /** stem → format → file path */
  stems: Record<string, Partial<Record<OutputFormat, string>>>;
  /** the input's (and outputs') rate */
  sampleRate: number;
  /** frames per output file at sampleRate: the input's length */
  frames: number;
  chunks: number;
  timings: FileSeparationTimings;
}

/**
 * Separates one audio file into one file per stem and output format, at the
 * input's sample rate and exact length. decodeMs, inferenceWaitMs, postMs and
 * encodeMs are spent on the calling thread one after another; inferenceMs
 * runs alongside them. Decoding, inference and encoding are
 * streamed, so memory does not depend on the input's length. Everything in
 * and out is plain data, so it runs unchanged inside a worker_threads Worker
 * that owns the model.
 */
export async function separateFile(options: SeparateFileOptions): Promise<SeparateFileResult> {
  const started = performance.now();
  const { inputPath, model, outDir, signal } = options;
  const outputs = options.outputs ?? [{ format: "wav" }];
  if (outputs.length === 0) throw new RangeError("at least one output format is required");
  if (new Set(outputs.map((o) => o.format)).size !== outputs.length) throw new RangeError("each output format may appear once");
  const firstStems = selectStems(model.manifest, options.stems);
  const modelRate = model.manifest.sampleRate;
  const { split } = options;
  if (split) {
    if (!firstStems.includes(split.of)) throw new RangeError(`the split's stem "${split.of}" is not among the stems written`);
    if (split.model.manifest.sampleRate !== modelRate)
      throw new RangeError(`the split model runs at ${split.model.manifest.sampleRate} Hz, the first at ${modelRate} Hz`);
    if (!readsInputOnce(split.model.manifest))
      throw new RangeError(
        `the split model "${split.model.manifest.name}" reads its input twice: it cannot split in the same pass`,
      );
    selectStems(split.model.manifest, split.stems);
  }
  const stemNames = split ? [...firstStems, ...split.stems, split.remainder] : firstStems;
  if (new Set(stemNames).size !== stemNames.length)
    throw new RangeError(`the split writes a stem twice (${stemNames.join(", ")})`);

  let decodeMs = 0;
  const probeStart = performance.now();
  const [probe] = await Promise.all([options.probe ?? probeAudio(inputPath), prepareFfmpeg()]);
  decodeMs += performance.now() - probeStart;
  const outputRate = probe.sampleRate;
  // Without resampling the stream keeps the decoded length exactly. With it (to the input's rate,
  // or an output's own), the encoders need the input's true length: lossy containers only
  // estimate it, so it is counted by a parallel decode.
  const resampled =
    outputRate !== modelRate || outputs.some((o) => o.format !== "mp3" && (o.sampleRate ?? modelRate) !== modelRate);
  const exactFrames: Promise<number | undefined> = !resampled
    ? Promise.resolve(undefined)
    : probe.framesExact
      ? Promise.resolve(probe.frames)
      : countDecodedFrames(inputPath, signal);
  exactFrames.catch(() => {});

  await mkdir(outDir, { recursive: true });
  const files: SeparateFileResult["stems"] = {};
  const targetsByStem = new Map<string, EncodeTarget[]>();
  for (const stem of stemNames) {
    const targets = outputs.map((o): EncodeTarget => ({ ...o, path: join(outDir, `${stem}.${o.format}`) }));
    targetsByStem.set(stem, targets);
    files[stem] = Object.fromEntries(targets.map((t) => [t.format, t.path]));
  }

  const timings = emptyTimings();
  const splitTimings = emptyTimings();
  async function* timedDecode(): AsyncGenerator<Float32Array> {
    const blocks = decodeToPcm(inputPath, { sampleRate: modelRate, probe, signal })[Symbol.asyncIterator]();
    try {
      while (true) {
        const t0 = performance.now();
        const next = await blocks.next();
        decodeMs += performance.now() - t0;
        if (next.done) return;
        yield next.value;
      }
    } finally {
      await blocks.return?.();
    }
  }

  let encodeMs = 0;
  let decodedFrames = 0;
  let encoders: Map<string, StereoPcmEncoder> | undefined;
  const startEncoders = (frames: number | undefined) =>
    new Map(
      stemNames.map((stem) => [
        stem,
        new StereoPcmEncoder({
          inputSampleRate: modelRate,
          outputSampleRate: outputRate,
          targets: targetsByStem.get(stem)!,
          ...(frames !== undefined ? { frames } : {}),
          ...(signal ? { signal } : {}),
        }),
      ]),
    );
  try {
    // ffmpeg takes a while to start: when the output length is already known,
    // the encoders start now, alongside the decoder, not once the model runs
    if (!resampled || probe.framesExact) encoders = startEncoders(await exactFrames);
    const common = {
      totalFrames: Math.round((probe.frames * modelRate) / probe.sampleRate),
      ...(options.batchSize !== undefined ? { batchSize: options.batchSize } : {}),
      ...(options.helperThread !== undefined ? { helperThread: options.helperThread } : {}),
      ...(signal ? { signal } : {}),
    };
    // progress is the last model's: its frames are the ones final
    const progress = options.onProgress ? { onProgress: options.onProgress } : {};
    const first = separateStream(timedDecode(), model, {
      ...common,
      stems: firstStems,
      timings,
      ...(options.overlap !== undefined ? { overlap: options.overlap } : {}),
      ...(options.shifts !== undefined ? { shifts: options.shifts } : {}),
      ...(split ? {} : progress),
      // decoding the file again is cheaper than keeping the first pass
      reopen: timedDecode,
    });
    const stream = split ? splitStemStream(first, split, { ...common, ...progress, timings: splitTimings }) : first;
    for await (const block of stream) {
      const t0 = performance.now();
      encoders ??= startEncoders(await exactFrames);
      decodedFrames += block.frames;
      await Promise.all(stemNames.map((stem) => encoders!.get(stem)!.write(block.stems[stem])));
      encodeMs += performance.now() - t0;
    }
    if (!encoders || decodedFrames === 0) throw new AudioDecodeError(inputPath, "no audio samples");
    const t0 = performance.now();
    await Promise.all([...encoders.values()].map((e) => e.finish()));
    encodeMs += performance.now() - t0;
  } catch (err) {
    await Promise.all([...(encoders?.values() ?? [])].map((e) => e.abort()));
    throw err;
  }

  const frames = outputRate === modelRate ? decodedFrames : ((await exactFrames) ?? decodedFrames);
  return {
    stems: files,
    sampleRate: outputRate,
    frames,
    chunks: timings.chunks,
    timings: {
      decodeMs,
      inferenceMs: timings.inferenceMs,
      inferenceWaitMs: timings.waitMs,
      postMs: timings.postMs,
      encodeMs,
      totalMs: performance.now() - started,
      ...(split
        ? {
            split: {
              inferenceMs: splitTimings.inferenceMs,
              inferenceWaitMs: splitTimings.waitMs,
              postMs: splitTimings.postMs,
            },
          }
        : {}),
    },
  };
}
