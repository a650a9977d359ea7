import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { decodeToPcm, probeAudio, StereoPcmEncoder, type AudioProbe, type EncodeTarget } from "@mixdown/audio";
import { EnsembleMixer } from "./ensemble.ts";
import type { EnsembleAlgorithm, EnsembleStem } from "./ensemble-names.ts";
import type { FamilyModel } from "./families/family.ts";
import { outputStemNames, type SeparationManifest } from "./families/index.ts";
import {
  separateFile,
  type FileSeparationTimings,
  type OutputFormat,
  type OutputSpec,
  type SeparateFileResult,
} from "./separate-file.ts";
import type { SeparationProgress } from "./separate-stream.ts";

export interface SeparateEnsembleOptions {
  inputPath: string;
  /** the input's probe, when the caller has it */
  probe?: AudioProbe;
  /** two or more loaded models, in the order the ensemble names them (it matters to the uvr_* ties) */
  models: FamilyModel<SeparationManifest>[];
  algorithm: EnsembleAlgorithm;
  /** what to write: default the stems every member outputs under the same name */
  stems?: EnsembleStem[];
  /** created if missing; files are `<stem>.<format>` */
  outDir: string;
  outputs?: OutputSpec[];
  /** each member's own files (float WAV), removed at the end unless keepMembers; default `<outDir>/members` */
  membersDir?: string;
  keepMembers?: boolean;
  batchSize?: number;
  overlap?: number;
  helperThread?: boolean;
  /** fractions over the whole ensemble: the members one after another, then the combining pass */
  onProgress?: (progress: SeparationProgress) => void;
  signal?: AbortSignal;
}

export interface SeparateEnsembleResult extends SeparateFileResult {
  /** each member's own run (its files are gone unless keepMembers) */
  members: Array<{ model: string; stems: SeparateFileResult["stems"]; chunks: number; timings: FileSeparationTimings }>;
  /** the combining pass: decode the members' files, combine, encode */
  combineMs: number;
}

/** Share of an ensemble's progress its members take; the combining pass, a decode and encode, the rest. */
const MEMBERS_SHARE = 0.95;

/**
 * Separates one file with several models and combines their outputs stem by stem with an
 * ensemble algorithm (see EnsembleMixer). Each member runs as `separateFile` alone, one after the
 * other, writing float WAVs at the input's rate and length; a last pass decodes the members' files
 * of each stem side by side and writes the combination. Nothing holds a whole song: each member
 * streams as a single model does, and the combining pass holds one STFT window per member. The
 * members may differ in family, rate and chunking (each is resampled back to the input's rate),
 * which running them in lockstep over shared blocks would have to reconcile; running them in turn
 * also keeps one model's working memory at a time. The cost is disk: one float WAV per member and
 * stem (about 21 MB per stereo minute at 44.1 kHz), removed at the end.
 */
export async function separateEnsemble(options: SeparateEnsembleOptions): Promise<SeparateEnsembleResult> {
  const started = performance.now();
  const { models, algorithm, outDir, signal } = options;
  if (models.length < 2) throw new RangeError(`an ensemble needs 2 or more models, got ${models.length}`);
  const names = models.map((m) => m.manifest.name);
  if (new Set(names).size !== names.length) throw new RangeError(`an ensemble names each model once, got ${names.join(", ")}`);
  const stems = options.stems ?? commonStems(models);
  if (stems.length === 0) throw new RangeError(`the models ${names.join(", ")} output no stem in common`);
  for (const s of stems)
    if (s.from.length !== models.length)
      throw new RangeError(`stem "${s.name}" names ${s.from.length} member stems for ${models.length} models`);
  const outputs = options.outputs ?? [{ format: "wav" }];
  const membersDir = options.membersDir ?? join(outDir, "members");
  const report = options.onProgress;

  const members: SeparateEnsembleResult["members"] = [];
  try {
    for (const [i, model] of models.entries()) {
      signal?.throwIfAborted();
      const own = [...new Set(stems.map((s) => s.from[i]!))];
      const result = await separateFile({
        inputPath: options.inputPath,
        ...(options.probe ? { probe: options.probe } : {}),
        model,
        outDir: join(membersDir, String(i)),
        outputs: [{ format: "wav", sampleFormat: "f32" }],
        stems: own,
        ...(options.batchSize !== undefined ? { batchSize: options.batchSize } : {}),
        ...(options.overlap !== undefined ? { overlap: options.overlap } : {}),
        ...(options.helperThread !== undefined ? { helperThread: options.helperThread } : {}),
        ...(report
          ? {
              onProgress: (p: SeparationProgress) =>
                report({ ...p, fraction: ((i + (p.fraction ?? 0)) / models.length) * MEMBERS_SHARE }),
            }
          : {}),
        ...(signal ? { signal } : {}),
      });
      members.push({ model: model.manifest.name, stems: result.stems, chunks: result.chunks, timings: result.timings });
    }

    const combineStarted = performance.now();
    await mkdir(outDir, { recursive: true });
    const files: SeparateFileResult["stems"] = {};
    let frames = 0;
    let sampleRate = 0;
    let done = 0;
    await Promise.all(
      stems.map(async (stem) => {
        const targets = outputs.map((o): EncodeTarget => ({ ...o, path: join(outDir, `${stem.name}.${o.format}`) }));
        const combined = await combineStemFiles({
          inputs: stem.from.map((s, i) => members[i]!.stems[s]!.wav!),
          algorithm,
          targets,
          ...(signal ? { signal } : {}),
        });
        frames = combined.frames;
        sampleRate = combined.sampleRate;
        files[stem.name] = Object.fromEntries(targets.map((t) => [t.format, t.path])) as Partial<Record<OutputFormat, string>>;
        done++;
        report?.({ processedFrames: frames, fraction: MEMBERS_SHARE + ((1 - MEMBERS_SHARE) * done) / stems.length });
      }),
    );
    const combineMs = performance.now() - combineStarted;
    const sum = (key: Exclude<keyof FileSeparationTimings, "split">) => members.reduce((t, m) => t + m.timings[key], 0);
    return {
      stems: files,
      sampleRate,
      frames,
      chunks: members.reduce((n, m) => n + m.chunks, 0),
      timings: {
        decodeMs: sum("decodeMs"),
        inferenceMs: sum("inferenceMs"),
        inferenceWaitMs: sum("inferenceWaitMs"),
        postMs: sum("postMs"),
        encodeMs: sum("encodeMs"),
        totalMs: performance.now() - started,
      },
      members,
      combineMs,
    };
  } finally {
    if (!options.keepMembers) await rm(membersDir, { recursive: true, force: true });
  }
}

/** The stems every model outputs under the same name, in the first model's order. */
export function commonStems(models: readonly FamilyModel<SeparationManifest>[]): EnsembleStem[] {
  const lists = models.map((m) => outputStemNames(m.manifest));
  return lists[0]!.filter((s) => lists.every((l) => l.includes(s))).map((name) => ({ name, from: models.map(() => name) }));
}

/**
 * Combines files of one stem, one per member (same rate and length: each member's output of the
 * same input), into `targets`, streamed: the files are decoded side by side and what the mixer
 * makes final is encoded at once.
 */
export async function combineStemFiles(options: {
  inputs: string[];
  algorithm: EnsembleAlgorithm;
  targets: EncodeTarget[];
  signal?: AbortSignal;
}): Promise<{ frames: number; sampleRate: number }> {
  const { inputs, signal } = options;
  const { sampleRate } = await probeAudio(inputs[0]!);
  const mixer = await EnsembleMixer.create(options.algorithm, inputs.length);
  const streams = inputs.map((path) => decodeToPcm(path, { sampleRate, ...(signal ? { signal } : {}) })[Symbol.asyncIterator]());
  const encoder = new StereoPcmEncoder({ inputSampleRate: sampleRate, targets: options.targets, ...(signal ? { signal } : {}) });
  // what each member's decoder has given and the mixer has not taken yet
  const pending: Float32Array[] = inputs.map(() => new Float32Array(0));
  const ended = inputs.map(() => false);
  let frames = 0;
  try {
    for (;;) {
      await Promise.all(
        streams.map(async (stream, i) => {
          if (pending[i]!.length > 0 || ended[i]) return;
          const next = await stream.next();
          if (next.done) ended[i] = true;
          else pending[i] = next.value;
        }),
      );
      const empty = pending.map((p) => p.length === 0);
      if (empty.every((e, i) => e && ended[i])) break;
      if (empty.some((e, i) => e && ended[i])) throw new Error("an ensemble member's output is shorter than the others'");
      if (empty.some(Boolean)) continue;
      const take = Math.min(...pending.map((p) => p.length));
      const out = mixer.push(pending.map((p) => p.subarray(0, take)));
      for (let i = 0; i < pending.length; i++) pending[i] = pending[i]!.subarray(take);
      frames += take / 2;
      if (out.length > 0) await encoder.write(out);
    }
    const tail = mixer.finish();
    if (tail.length > 0) await encoder.write(tail);
    await encoder.finish();
  } catch (err) {
    await encoder.abort();
    await Promise.all(streams.map((s) => s.return?.(undefined)));
    throw err;
  }
  return { frames, sampleRate };
}
