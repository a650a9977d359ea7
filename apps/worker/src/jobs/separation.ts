import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { UnrecoverableError, type Job } from "bullmq";
import type { Logger } from "pino";
import type { SeparationJobRunRepository, SeparationOutputs, StoredStem } from "@mixdown/db";
import type { SeparationPayload } from "@mixdown/queue";
import type { OutputSpec } from "@mixdown/separation";
import type { ObjectStorage } from "@mixdown/storage";
import type { SeparationPool } from "../separation-protocol.ts";
import { TaskFailure } from "../task-threads.ts";
import { progressReporter } from "./progress.ts";

export interface SeparationJobDeps {
  runs: SeparationJobRunRepository;
  storage: ObjectStorage;
  pool: SeparationPool;
  tmpDir: string;
  losslessFormat: "wav" | "flac";
  lossyBitrateKbps: number;
  /** Model names per separation kind (the manifests in MODELS_DIR). */
  models: { vocalSeparation: string; stemSplit: string };
  logger: Logger;
}

/** Stems a vocal separation publishes as stem entries; a stem split publishes every model stem but the derived backing. */
const VOCAL_SEPARATION_STEMS = ["vocals", "backing"];

/**
 * Separates one uploaded file: download, separate in a thread, upload every output under the
 * row's own keys, then publish them on the row in one statement. Safe to run twice: outputs are
 * overwritten in place and only a `running` row is ever updated.
 */
export async function processSeparationJob(job: Job<SeparationPayload>, deps: SeparationJobDeps): Promise<void> {
  const { jobId, kind } = job.data;
  const log = deps.logger.child({ jobId, queue: "separation", bullJobId: job.id, attempt: job.attemptsMade + 1 });
  const row = await deps.runs.findRunnable(jobId);
  if (!row) {
    log.info("row is not running any more; nothing to do");
    return;
  }
  await deps.runs.markStarted(jobId, job.attemptsMade === 0);
  log.info({ kind }, "separation started");

  const workDir = join(deps.tmpDir, "jobs", `separation-${jobId}-${job.attemptsMade}-${process.pid}`);
  await mkdir(workDir, { recursive: true });
  try {
    const inputPath = join(workDir, "input");
    await deps.storage.downloadToFile(row.inputKey, inputPath);

    const outputs: OutputSpec[] = [
      deps.losslessFormat === "flac" ? { format: "flac", bitDepth: 24 } : { format: "wav", sampleFormat: "f32" },
      { format: "mp3", bitrateKbps: deps.lossyBitrateKbps },
    ];
    const modelName = kind === "vocal-separation" ? deps.models.vocalSeparation : deps.models.stemSplit;
    const progress = progressReporter(job, (percent) => deps.runs.setProgress(jobId, percent), log);
    const started = performance.now();
    const result = await deps.pool
      .run({ inputPath, modelName, outDir: join(workDir, "out"), outputs }, progress.report)
      .catch((err: unknown) => {
        if (err instanceof TaskFailure && err.unrecoverable) throw new UnrecoverableError(describeFailure(err));
        throw err;
      });
    await progress.flush();
    log.info({ timings: result.timings, frames: result.frames, sampleRate: result.sampleRate }, "separated");

    const lossless = deps.losslessFormat;
    const prefix = `outputs/${kind}/${jobId}`;
    const upload = async (stem: string, format: "wav" | "flac" | "mp3"): Promise<string> => {
      const path = result.stems[stem]?.[format];
      if (!path) throw new Error(`the separation produced no ${format} file for stem ${stem}`);
      const key = `${prefix}/${stem}.${format}`;
      await deps.storage.putFile(key, path);
      return key;
    };
    const stemNames =
      kind === "vocal-separation" ? VOCAL_SEPARATION_STEMS : Object.keys(result.stems).filter((s) => s !== "backing");
    const stems: StoredStem[] = [];
    const lossyStems: StoredStem[] = [];
    for (const stem of new Set([...stemNames, "vocals", "backing"])) {
      const [losslessKey, lossyKey] = await Promise.all([upload(stem, lossless), upload(stem, "mp3")]);
      if (stemNames.includes(stem)) {
        stems.push({ instrument: stem, key: losslessKey });
        lossyStems.push({ instrument: stem, key: lossyKey });
      }
    }
    const published: SeparationOutputs = {
      vocalKey: `${prefix}/vocals.${lossless}`,
      lossyVocalKey: `${prefix}/vocals.mp3`,
      backingKey: `${prefix}/backing.${lossless}`,
      stems,
      lossyStems,
    };
    const updated = await deps.runs.complete(jobId, published);
    await job.updateProgress(100);
    log.info({ ms: Math.round(performance.now() - started), updated }, updated ? "separation succeeded" : "row had already finished");
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

function describeFailure(err: TaskFailure): string {
  if (/cannot decode|no audio/i.test(err.message)) {
    return `The uploaded audio could not be decoded (${err.message.replace(/^cannot decode \S+: /, "")})`;
  }
  return err.message;
}
