import { checkFreeSpace } from "../../steps/free-space.ts";
import { checkInputLength, probeSeconds } from "../../steps/input-length.ts";
import { downloadLink, type LinkDownloads } from "../../steps/download-link.ts";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { AUDIO_CONTENT_TYPES, sniffAudioFile, type AudioFormat } from "@mixdown/audio";
import { WebhookAddressPolicy } from "@mixdown/webhooks";
import { SeparationJobRepository, type SeparationJob, type SeparationOutputs, type StoredStem } from "@mixdown/db";
import { JobFailure, type LosslessFormat, type OutputOptions, type WrittenOutput } from "@mixdown/jobs";
import type { OutputSpec, SeparateFileResult, SeparationManifest } from "@mixdown/separation";
import { writeRemainder } from "@mixdown/separation/vocal-split";
import {
  modelListProblemMessage,
  readInstalledModels,
  resolveModelList,
  resolveVocalSplit,
  vocalPairOf,
  type EnsembleAlgorithm,
  type SeparationJobKindName,
  type InstalledModel,
} from "@mixdown/separation/installed-models";
import { planSeparationJob, SeparationPlanError, type SeparationJobPlan } from "@mixdown/separation/job-plan";
import { jobOutputKeys, type ObjectStorage } from "@mixdown/storage";
import type { Config } from "@mixdown/config";
import type { AudioAnalysis } from "@mixdown/analysis";
import type { Logger } from "pino";
import type { JobContext, JobHandler } from "../../run-job.ts";
import { UploadQueue } from "../../upload-queue.ts";
import type { WorkerMetrics } from "../../worker-metrics.ts";
import type { WorkerKind } from "../context.ts";
import type { AudioAnalysisPool } from "../audio-analysis/protocol.ts";
import { createSeparationPool, type SeparationModelProvider, type SeparationPool } from "./protocol.ts";

export interface SeparationJobDeps {
  storage: ObjectStorage;
  /** MAX_SEPARATION_SECONDS: longer input fails the job (bad input). */
  maxInputSeconds: number;
  pool: SeparationPool;
  losslessFormat: "wav" | "flac";
  lossyBitrateKbps: number;
  /**
   * Model names per separation kind (the manifests in MODELS_DIR): for jobs that name none, one
   * model or an ensemble's; and the model that splits a vocal separation's whole vocal into lead,
   * harmony and reverb (SEPARATION_MODEL_VOCAL_SPLIT, `none` for no split).
   */
  models: { vocalSeparation: readonly string[]; stemSplit: readonly string[]; vocalSplit: string };
  /** How a setting that names several models (an ensemble) combines them (SEPARATION_ENSEMBLE_*). */
  ensembles: { vocalSeparation: EnsembleAlgorithm; stemSplit: EnsembleAlgorithm };
  modelsDir: string;
  /** The analysis threads, for jobs created with `analyze=true` (made on the first such job). */
  analysisPool: () => AudioAnalysisPool;
  /**
   * Jobs made from a link (a batch's `urls`): the addresses it may lead to (WEBHOOK_DENIED_NETWORKS),
   * the most it may download (MAX_SEPARATION_UPLOAD_BYTES, an upload's limit), and the row told
   * what the input is once downloaded.
   */
  links: LinkDownloads & {
    maxBytes: number;
    recordInput(id: number, input: { inputFormat: AudioFormat; audioSeconds: number }): Promise<void>;
  };
}

/** The formats a separation takes (the API's SEPARATION_FORMATS), as a link's file is judged by its bytes. */
const LINK_FORMATS: readonly AudioFormat[] = ["wav", "webm", "mp3", "flac"];

/**
 * The input of a job made from a link, at `inputPath`: downloaded once (downloadLink: the address
 * policy on every request, MAX_SEPARATION_UPLOAD_BYTES), judged by its bytes, and stored under the
 * row's own upload key, so that a retry (the worker killed later) takes it from there rather than
 * downloading again, and everything after (retention, deletion) treats it as an upload. A file
 * that is none of the formats a separation takes fails the job (bad input), naming the link.
 */
async function linkedInput(
  deps: SeparationJobDeps,
  row: Pick<SeparationJob, "inputKey"> & { inputUrl: string },
  { log, signal }: Pick<JobContext<"separation">, "log" | "signal">,
  inputPath: string,
): Promise<AudioFormat> {
  const stored = await deps.storage.exists(row.inputKey);
  if (stored) await deps.storage.downloadToFile(row.inputKey, inputPath);
  else await downloadLink(deps.links, "inputUrl", row.inputUrl, inputPath, deps.links.maxBytes, log, signal);
  const sniffed = await sniffAudioFile(inputPath);
  // an ID3 tag fronts mp3 (and, rarely, FLAC): the probe after this says whether it decodes
  const format = sniffed === "id3" ? "mp3" : sniffed;
  if (format === null || format === "matroska" || !LINK_FORMATS.includes(format))
    throw new JobFailure(
      "bad-input",
      `inputUrl: the file at ${row.inputUrl} is not ${LINK_FORMATS.slice(0, -1).join(", ")} or ${LINK_FORMATS.at(-1)} audio (decided from its content, not its name)`,
    );
  if (!stored) await deps.storage.putFile(row.inputKey, inputPath, { contentType: AUDIO_CONTENT_TYPES[format] });
  return format;
}

/** The share of a job's progress its separation takes when the input and stems are analysed after it. */
const SEPARATION_SHARE_WHEN_ANALYSED = 0.7;

/**
 * A separation's `analyze=true`: the input, then each published stem (its lossless file, as
 * uploaded), analysed one after the other on the analysis threads; the record's `analysis`.
 */
async function analyseInputAndStems(
  pool: AudioAnalysisPool,
  inputPath: string,
  stems: Array<{ instrument: string; path: string }>,
  reportProgress: (fraction: number) => void,
  signal: AbortSignal,
): Promise<{ input: AudioAnalysis; stems: Array<{ instrument: string; analysis: AudioAnalysis }> }> {
  const files = [{ instrument: "", path: inputPath }, ...stems];
  const results: AudioAnalysis[] = [];
  for (const [i, file] of files.entries()) {
    const share = (f: number) =>
      reportProgress(SEPARATION_SHARE_WHEN_ANALYSED + ((i + f) / files.length) * (0.99 - SEPARATION_SHARE_WHEN_ANALYSED));
    results.push((await pool.run({ inputPath: file.path }, share, signal)).analysis);
  }
  return { input: results[0]!, stems: stems.map((s, i) => ({ instrument: s.instrument, analysis: results[i + 1]! })) };
}

/** The job's plan (see planSeparationJob), its problems as the job's failure. */
function planJob(
  deps: SeparationJobDeps,
  installed: readonly InstalledModel[],
  kind: SeparationJobKindName,
  row: { models: string[]; ensemble: string | null },
  stems: readonly string[] | null,
): SeparationJobPlan {
  const vocals = kind === "vocal-separation";
  try {
    return planSeparationJob({
      kind,
      installed,
      models: row.models,
      ensemble: row.ensemble,
      stems,
      settings: {
        models: vocals ? deps.models.vocalSeparation : deps.models.stemSplit,
        ensemble: vocals ? deps.ensembles.vocalSeparation : deps.ensembles.stemSplit,
        vocalSplit: deps.models.vocalSplit,
      },
    });
  } catch (err) {
    if (err instanceof SeparationPlanError) throw new JobFailure(err.failure, err.message);
    throw err;
  }
}

/** A job's lossless output as the separation writes it: its options, else the server's format as always (WAV f32, FLAC 24-bit). */
function losslessSpec(options: Pick<OutputOptions, "format" | "sampleRate"> & Partial<OutputOptions>): OutputSpec {
  const rate = options.sampleRate !== null ? { sampleRate: options.sampleRate } : {};
  if (options.format === "wav") return { format: "wav", sampleFormat: options.sampleFormat ?? "f32", ...rate };
  return {
    format: "flac",
    bitDepth: options.sampleFormat === "s16" ? 16 : 24,
    ...(options.compressionLevel != null ? { compressionLevel: options.compressionLevel } : {}),
    ...rate,
  };
}

/** What a job with output options wrote (its record's `output`): the options, the rate written, the stems kept. */
function writtenOutput(options: OutputOptions, inputRate: number, stemFiles: StemFiles): WrittenOutput {
  return {
    format: options.format,
    sampleFormat: options.sampleFormat,
    compressionLevel: options.compressionLevel,
    sampleRate: options.sampleRate ?? inputRate,
    stems: stemFiles.map(([instrument]) => instrument),
  };
}

type Format = "wav" | "flac" | "mp3";
/** Every file a job publishes, by the name its key ends with: its path in each format. */
type JobFiles = Map<string, Partial<Record<Format, string>>>;
/** A published file's keys. */
type UploadedFile = { lossless: string; lossy: string };
/** The record's stems: each instrument and the published file it is. */
type StemFiles = Array<[instrument: string, file: string]>;

/**
 * The files a separation publishes as the record's stems. A vocal separation publishes vocals and
 * backing (its model's vocal pair), and with the vocal split the lead as its vocals, harmony and
 * reverb beside them (the whole vocal stays the vocal URL); a stem split every stem the network
 * outputs (all six of a 6-stem model), not the derived backing, which is no instrument.
 */
export function stemFilesOf(
  kind: SeparationJobKindName,
  plan: Pick<SeparationJobPlan, "instruments" | "split">,
  pair: { vocals: string; backing: string } | undefined,
): StemFiles {
  if (kind === "stem-split") return plan.instruments.map((s) => [s, s]);
  if (plan.split)
    return [
      ["vocals", "lead"],
      ["harmony", "harmony"],
      ["reverb", "reverb"],
      ["backing", pair!.backing],
    ];
  return [
    ["vocals", pair!.vocals],
    ["backing", pair!.backing],
  ];
}

/**
 * The vocal pair's files the job publishes as its vocal and backing URLs: both whenever the model
 * has vocals; with output control's `stems`, the whole vocal only with `vocals` kept and the
 * backing only with `backing`.
 */
function pairFilesKept(
  pair: { vocals: string; backing: string } | undefined,
  stems: readonly string[] | null,
): { vocals?: string; backing?: string } {
  if (!pair) return {};
  return {
    ...(!stems || stems.includes("vocals") ? { vocals: pair.vocals } : {}),
    ...(!stems || stems.includes("backing") ? { backing: pair.backing } : {}),
  };
}

/** The keys the row stores, once every upload finished: the record's stems, and the vocal pair's kept. */
function storedKeys(
  stemFiles: StemFiles,
  pair: { vocals?: string; backing?: string },
  uploads: UploadQueue<UploadedFile>,
): Omit<SeparationOutputs, "models" | "ensemble"> {
  const stems: StoredStem[] = stemFiles.map(([instrument, f]) => ({ instrument, key: uploads.uploaded(f).lossless }));
  const lossyStems: StoredStem[] = stemFiles.map(([instrument, f]) => ({ instrument, key: uploads.uploaded(f).lossy }));
  return {
    vocalKey: pair.vocals ? uploads.uploaded(pair.vocals).lossless : null,
    lossyVocalKey: pair.vocals ? uploads.uploaded(pair.vocals).lossy : null,
    backingKey: pair.backing ? uploads.uploaded(pair.backing).lossless : null,
    stems,
    lossyStems,
  };
}

/**
 * The vocal split's second run, for a first run that could not split in the same pass (an
 * ensemble's vocal, combined from files; a split model that reads its input twice): the whole vocal
 * (its lossless file, as published) split into harmony and reverb, then the lead written as what
 * they leave of it, so lead + harmony + reverb + backing is the input. Each file is queued for
 * upload once it is final: the whole vocal and the backing while the split runs, harmony and reverb
 * while the lead is written.
 */
async function splitAfterwards(
  job: Pick<JobContext<"separation">, "workDir" | "log" | "reportProgress" | "signal">,
  pool: SeparationPool,
  step: {
    splitModel: InstalledModel;
    pair: { vocals: string; backing: string };
    outputs: OutputSpec[];
    lossless: "wav" | "flac";
    /** the share of the job's progress the first run took */
    firstShare: number;
  },
  files: JobFiles,
  /** queues a final file for upload, when the job keeps it */
  publish: (file: string) => void,
): Promise<void> {
  const { workDir, log, reportProgress, signal } = job;
  const { splitModel, pair, outputs, lossless, firstShare } = step;
  publish(pair.vocals);
  publish(pair.backing);
  const whole = files.get(pair.vocals)![lossless]!;
  const splitDir = join(workDir, "split");
  const parts = await pool.run(
    {
      inputPath: whole,
      modelName: splitModel.name,
      manifests: [splitModel.manifest],
      outDir: splitDir,
      outputs,
      stems: ["harmony", "reverb"],
    },
    (f) => reportProgress(firstShare + f * (0.95 - firstShare)),
    signal,
  );
  log.info({ timings: parts.timings, model: splitModel.name }, "split the vocal");
  files.set("harmony", parts.stems.harmony!);
  files.set("reverb", parts.stems.reverb!);
  publish("harmony");
  publish("reverb");
  const lead = Object.fromEntries(outputs.map((o) => [o.format, join(splitDir, `lead.${o.format}`)]));
  const leadStarted = performance.now();
  await writeRemainder(
    whole,
    [parts.stems.harmony![lossless]!, parts.stems.reverb![lossless]!],
    outputs.map((o) => ({ ...o, path: lead[o.format]! })),
    signal,
  );
  log.info({ ms: performance.now() - leadStarted }, "wrote the lead");
  files.set("lead", lead);
}

/**
 * Separates one uploaded file: download, separate in a thread, upload every output under the
 * row's own keys (`outputs/<kind>/<id>/<file>.<format>`, overwritten in place by a retry). A vocal
 * separation then splits its whole vocal (`vocals.<format>`, still the vocal URL) into the lead
 * (`lead.<format>`, the record's `vocals` stem), `harmony` and `reverb`, when the split model is
 * installed; a stem split publishes its model's stems only.
 */
export function separationHandler(deps: SeparationJobDeps): JobHandler<"separation"> {
  return {
    async run(context) {
      const { row, payload, rowId, workDir, log, signal } = context;
      // with analyses to run after it, the separation reports the first part of the job's progress
      const reportProgress = row.analyze
        ? (f: number) => context.reportProgress(f * SEPARATION_SHARE_WHEN_ANALYSED)
        : context.reportProgress;
      const job = { ...context, reportProgress };
      const { kind } = payload;
      const inputPath = join(workDir, "input");
      const { inputUrl } = row;
      const linkFormat = inputUrl ? await linkedInput(deps, { inputKey: row.inputKey, inputUrl }, context, inputPath) : null;
      if (!inputUrl) await deps.storage.downloadToFile(row.inputKey, inputPath);
      signal.throwIfAborted();
      const inputProbe = await checkInputLength(
        inputPath,
        { seconds: deps.maxInputSeconds, setting: "MAX_SEPARATION_SECONDS" },
        "input",
        signal,
      );
      if (inputUrl && linkFormat) {
        // what an upload's create finds (its length is what the job counts in its key's usage)
        const seconds = probeSeconds(inputProbe);
        if (!seconds)
          throw new JobFailure("bad-input", `inputUrl: the file at ${inputUrl} does not decode as ${linkFormat} audio`);
        const inputFormat = inputProbe?.format === "flac" ? "flac" : linkFormat;
        await deps.links.recordInput(rowId, { inputFormat, audioSeconds: seconds });
      }
      // output control, resolved at create; null: the job is written as every Kits job is
      const asked = row.outputOptions as OutputOptions | null;
      const outputs: OutputSpec[] = [
        asked ? losslessSpec(asked) : losslessSpec({ format: deps.losslessFormat, sampleRate: null }),
        { format: "mp3", bitrateKbps: deps.lossyBitrateKbps },
      ];
      // Read once per job (the models directory may have changed since start): the plan is made
      // from it, and the thread loads a model it has not loaded yet from the manifests it carries.
      const { models: installed } = await readInstalledModels(deps.modelsDir);
      const plan = planJob(deps, installed, kind, row, asked?.stems ?? null);
      if (plan.splitOff) log.warn({ reason: plan.splitOff }, "vocal separation without the vocal split");
      const seconds = probeSeconds(inputProbe);
      if (seconds !== undefined) await checkFreeSpace(workDir, { seconds, files: plan.outputFiles, formats: outputs });
      const firstShare = plan.firstShare;
      const result: SeparateFileResult = await deps.pool.run(
        { inputPath, ...(inputProbe ? { inputProbe } : {}), outDir: join(workDir, "out"), outputs, ...plan.run },
        plan.split ? (f) => reportProgress(f * firstShare) : reportProgress,
        signal,
      );
      log.info({ timings: result.timings, frames: result.frames, sampleRate: result.sampleRate }, "separated");

      const lossless = outputs[0]!.format as LosslessFormat;
      const stored = jobOutputKeys(kind, rowId);
      const files: JobFiles = new Map(Object.entries(result.stems));
      const upload = async (file: string, format: Format): Promise<string> => {
        const path = files.get(file)?.[format];
        if (!path) throw new Error(`the separation produced no ${format} file for ${file}`);
        const key = stored.file(`${file}.${format}`);
        // the job's files are final once queued, and only deleted with its work directory after
        await deps.storage.putFile(key, path, { final: true });
        return key;
      };
      const uploads = new UploadQueue<UploadedFile>(async (file) => {
        // both formats settle before this upload does, so nothing is still being written when it fails
        const results = await Promise.allSettled([upload(file, lossless), upload(file, "mp3")]);
        const [losslessKey, lossyKey] = results.map((r) => {
          if (r.status === "rejected") throw r.reason;
          return r.value;
        });
        return { lossless: losslessKey!, lossy: lossyKey! };
      }, signal);
      // Vocal and backing URLs come with either kind whenever the model has vocals.
      const pair = vocalPairOf(Object.keys(result.stems));
      if (kind === "vocal-separation" && !pair)
        throw new JobFailure("permanent", `The separation model "${plan.models.join(",")}" produced no vocals and backing`);
      const stemFiles = stemFilesOf(kind, plan, pair).filter(([instrument]) => plan.stems.includes(instrument));
      const pairKept = pairFilesKept(pair, asked?.stems ?? null);
      // a file the job does not keep stays in its work directory
      const kept = new Set([...stemFiles.map(([, f]) => f), ...Object.values(pairKept)]);
      const publish = (file: string) => {
        if (kept.has(file)) uploads.add(file);
      };
      try {
        if (plan.split && !plan.split.onePass)
          await splitAfterwards(
            job,
            deps.pool,
            { splitModel: plan.split.model, pair: pair!, outputs, lossless, firstShare },
            files,
            publish,
          );
        const waitStarted = performance.now();
        for (const file of kept) uploads.add(file);
        await uploads.finished();
        log.info({ ms: uploads.uploadMs, waitedMs: performance.now() - waitStarted, files: uploads.files * 2 }, "uploaded");
      } catch (err) {
        await uploads.settled();
        throw err;
      }
      const analysis = row.analyze
        ? await analyseInputAndStems(
            deps.analysisPool(),
            inputPath,
            stemFiles.map(([instrument, f]) => ({ instrument, path: files.get(f)![lossless]! })),
            context.reportProgress,
            signal,
          )
        : undefined;
      if (analysis) log.info({ stems: analysis.stems.length }, "analysed the input and the stems");
      return {
        ...storedKeys(stemFiles, pairKept, uploads),
        models: plan.models,
        ensemble: plan.ensemble?.algorithm ?? null,
        ...(analysis ? { analysis: JSON.parse(JSON.stringify(analysis)) } : {}),
        ...(asked ? { output: { ...writtenOutput(asked, result.sampleRate, stemFiles) } } : {}),
      } satisfies SeparationOutputs;
    },
    async discard({ payload, rowId }) {
      await deps.storage.deletePrefix(jobOutputKeys(payload.kind, rowId).prefix);
    },
  };
}

/**
 * Refuses to start a separation worker whose settings name a model that is not installed, or one
 * that cannot serve its kind: otherwise every job that names no model would fail, one by one.
 * The vocal split is optional. Returns the manifests of the models to preload (the settings' and
 * the split model), and the split model's name, or why vocal separations will publish vocals and
 * backing only (the worker logs it).
 */
export async function checkSeparationSettings(
  config: Pick<Config, "SEPARATION_MODEL_VOCALS" | "SEPARATION_MODEL_STEMS" | "SEPARATION_MODEL_VOCAL_SPLIT">,
  modelsDir: string,
): Promise<{ preload: SeparationManifest[]; vocalSplit?: string; vocalSplitOff?: string }> {
  const { models, invalid } = await readInstalledModels(modelsDir);
  const broken = invalid.length ? `; invalid manifests: ${invalid.map((i) => i.error).join("; ")}` : "";
  const settings = [
    ["SEPARATION_MODEL_VOCALS", config.SEPARATION_MODEL_VOCALS, "vocal-separation"],
    ["SEPARATION_MODEL_STEMS", config.SEPARATION_MODEL_STEMS, "stem-split"],
  ] as const;
  const preload = new Set<InstalledModel>();
  for (const [setting, names, kind] of settings) {
    // one model, or an ensemble's (the config schema refused empty and repeated names)
    const resolved = resolveModelList(models, names, kind);
    if (resolved.problem)
      throw new Error(
        `${setting}="${names.join(",")}" with the models in ${modelsDir}: ${modelListProblemMessage(resolved, kind)}${broken}`,
      );
    for (const member of resolved.members) preload.add(member);
  }
  const split = resolveVocalSplit(config.SEPARATION_MODEL_VOCAL_SPLIT, models);
  if (split.model) preload.add(split.model);
  const manifests = [...preload].map((m) => m.manifest);
  return split.model ? { preload: manifests, vocalSplit: split.model.name } : { preload: manifests, vocalSplitOff: split.reason };
}

/**
 * Says where the separation models run, once per model (every thread of the pool loads them
 * alike): info when on the configured provider, a warning with the reason after a fallback.
 */
function reportProviders(threads: SeparationModelProvider[][], logger: Logger, metrics: WorkerMetrics | undefined): void {
  const seen = new Set<string>();
  for (const p of threads.flat()) {
    if (seen.has(p.model)) continue;
    seen.add(p.model);
    metrics?.executionProvider(p.model, p.requested, p.running);
    if (p.fallbackReason) {
      logger.warn(
        { model: p.model, requested: p.requested, provider: p.running, reason: p.fallbackReason },
        `separation model runs on ${p.running}: ${p.requested} is unavailable (ORT_PROVIDER_FALLBACK=cpu)`,
      );
    } else {
      logger.info({ model: p.model, provider: p.running }, `separation model runs on ${p.running}`);
    }
  }
}

/**
 * Whether the vocal split gets an inference thread of its own (SEPARATION_VOCAL_SPLIT_THREAD). With
 * `auto`, only with more than two cores: on two, a model's run already keeps ~1.45 of them busy, the
 * runs side by side took the same job time as the runs in turn, and held a second run's working
 * memory and a second thread (docs/benchmarks.md).
 */
export function splitHasOwnThread(setting: Config["SEPARATION_VOCAL_SPLIT_THREAD"], cores = availableParallelism()): boolean {
  return setting === "own" || (setting === "auto" && cores > 2);
}

/** Checks the settings' models, loads them on the separation threads and says where they run. */
export const separationKind: WorkerKind<"separation"> = {
  async start({ config, logger, metrics, prisma, storage, modelsDir, output, pooled, idle, audioAnalysisPool }) {
    const separations = new SeparationJobRepository(prisma);
    const { preload, vocalSplit, vocalSplitOff } = await checkSeparationSettings(config, modelsDir);
    if (vocalSplitOff)
      logger.warn({ reason: vocalSplitOff }, "vocal separations publish vocals and backing only (no vocal split)");
    // where each model runs, said once its threads have loaded them: at start, or (a worker
    // restarted cold, or unloaded for idleness) when a job loads them again
    const report = (threads: unknown[]) => reportProviders(threads as SeparationModelProvider[][], logger, metrics);
    const pool: SeparationPool = pooled(
      createSeparationPool(
        config.WORKER_CONCURRENCY_SEPARATION,
        {
          modelsDir,
          executionProvider: config.ORT_EXECUTION_PROVIDER,
          providerFallback: config.ORT_PROVIDER_FALLBACK,
          intraOpThreads: config.ORT_INTRA_OP_THREADS,
          interOpThreads: config.ORT_INTER_OP_THREADS,
          preload,
          // it runs beside the vocals model, in the same pass: on a thread of its own neither waits
          // for the other's runs, which pays only where there are cores to spare
          ownThread: vocalSplit && splitHasOwnThread(config.SEPARATION_VOCAL_SPLIT_THREAD) ? [vocalSplit] : [],
        },
        idle("separation", () => void pool.ready().then(report, () => undefined)),
      ),
    );
    report(await pool.ready());
    return separationHandler({
      storage,
      maxInputSeconds: config.MAX_SEPARATION_SECONDS,
      pool,
      ...output,
      models: {
        vocalSeparation: config.SEPARATION_MODEL_VOCALS,
        stemSplit: config.SEPARATION_MODEL_STEMS,
        vocalSplit: config.SEPARATION_MODEL_VOCAL_SPLIT,
      },
      ensembles: { vocalSeparation: config.SEPARATION_ENSEMBLE_VOCALS, stemSplit: config.SEPARATION_ENSEMBLE_STEMS },
      modelsDir,
      analysisPool: audioAnalysisPool,
      links: {
        policy: new WebhookAddressPolicy(config.WEBHOOK_DENIED_NETWORKS),
        maxBytes: config.MAX_SEPARATION_UPLOAD_BYTES,
        recordInput: (id, input) => separations.recordDownloadedInput(id, input),
      },
    });
  },
};
