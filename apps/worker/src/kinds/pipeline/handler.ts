import { setTimeout as sleep } from "node:timers/promises";
import { extname } from "node:path";
import {
  isDatabaseUnavailable,
  MasteringJobRepository,
  SeparationJobRepository,
  startPipelineStep,
  VocalRepairJobRepository,
  VoiceConversionJobRepository,
  withStepJobs,
  type MixdownJobTables,
  type PipelineStepWithJob,
  type PipelineWithSteps,
  type Prisma,
  type PrismaClient,
} from "@mixdown/db";
import { JobFailure, pipelineStepInputKey, type JobRef } from "@mixdown/jobs";
import type { JobQueues } from "@mixdown/queue";
import type { ObjectStorage } from "@mixdown/storage";
import type { Logger } from "pino";
import type { JobContext, JobHandler } from "../../run-job.ts";
import type { WorkerKind } from "../context.ts";

export interface PipelineJobDeps {
  prisma: PrismaClient;
  storage: ObjectStorage;
  queues: Pick<JobQueues, "enqueue" | "announceCancel">;
  tables: Pick<MixdownJobTables, StepKind>;
  /** How often the running step's job is read (its status and progress). */
  pollMs: number;
}

/** The kinds a pipeline's steps run as (`@mixdown/jobs`' PIPELINE_STEPS). */
type StepKind = "separation" | "vocal-repair" | "voice-conversion" | "mastering";

const stepName = (step: PipelineStepWithJob) => `steps[${step.index}] (${step.step})`;

/**
 * The keys of what a step's job published that the next step takes: a separation's whole vocal
 * and its backing, a vocal repair's repaired vocal, a conversion's converted vocal or (a
 * recombine) its mix onto the backing, a mastering's 24-bit master.
 */
async function publishedKeys(
  prisma: PrismaClient,
  step: PipelineStepWithJob,
): Promise<{ out: string | null; backing: string | null }> {
  const where = { where: { id: step.jobId as number } };
  switch (step.kind as StepKind) {
    case "separation": {
      const job = await prisma.separationJob.findUniqueOrThrow(where);
      return { out: job.vocalKey, backing: job.backingKey };
    }
    case "vocal-repair":
      return { out: (await prisma.vocalRepairJob.findUniqueOrThrow(where)).outputKey, backing: null };
    case "mastering":
      return { out: (await prisma.masteringJob.findUniqueOrThrow(where)).outputKey, backing: null };
    case "voice-conversion": {
      const job = await prisma.voiceConversionJob.findUniqueOrThrow(where);
      return { out: step.step === "recombine" ? job.recombinedKey : job.outputKey, backing: null };
    }
  }
}

/**
 * Runs a pipeline: each step in turn as an ordinary job of its kind, created once (in the
 * transaction that records its id on the step) when the step before it has succeeded, then
 * waited on. A retried attempt (a worker killed, PostgreSQL or Redis away) resumes: a step whose
 * job succeeded is not run again, a step whose job exists is waited on, not created again.
 */
export function pipelineHandler(deps: PipelineJobDeps): JobHandler<"pipeline"> {
  const { prisma, storage, queues, tables } = deps;

  /** Copies `from` to the step's own input key (the step's job owns it, as an upload). */
  async function copyInput(pipelineId: number, step: PipelineStepWithJob, name: string, from: string): Promise<string> {
    const ext = extname(from).slice(1) || "wav";
    const key = pipelineStepInputKey(step.kind, pipelineId, step.index, name, ext);
    await storage.putStream(key, await storage.getStream(from));
    return key;
  }

  /** Writes the step's job (or, for a recombine, records the convert's) and queues it when created. */
  async function startStep(pipeline: PipelineWithSteps, step: PipelineStepWithJob, log: Logger): Promise<number> {
    const before = pipeline.steps[step.index - 1];
    if (step.step === "recombine") {
      // the convert before it mixed onto the backing: its job is this step's
      const convertJob = before?.jobId as number;
      return (await startPipelineStep(prisma, pipeline.id, step.index, async () => ({ id: convertJob }))).jobId;
    }
    const source = before ? (await publishedKeys(prisma, before)).out : pipeline.inputKey;
    if (!source) throw new JobFailure("permanent", `${stepName(step)}: the step before it published no audio to take`);
    const inputKey = await copyInput(pipeline.id, step, "input", source);
    const inputFormat = extname(inputKey).slice(1);
    const common = { callerId: pipeline.callerId, apiKeyId: pipeline.apiKeyId, audioSeconds: pipeline.audioSeconds };
    const options = step.options as Record<string, Prisma.JsonValue>;
    let create: (tx: Prisma.TransactionClient) => Promise<{ id: number }>;
    let ref: (jobId: number) => JobRef;
    const named = { ...common, inputKey, inputFormat, inputFileName: pipeline.inputFileName };
    if (step.kind === "separation") {
      const repository = new SeparationJobRepository(prisma);
      create = (tx) =>
        repository.create(
          {
            ...named,
            kind: "vocal_separation",
            models: (options.models as string[] | undefined) ?? [],
            ensemble: (options.ensemble as string | null | undefined) ?? null,
          },
          tx,
        );
      ref = (jobId) => ({ queue: "separation", payload: { kind: "vocal-separation", jobId } });
    } else if (step.kind === "vocal-repair") {
      const repository = new VocalRepairJobRepository(prisma);
      // the vocal comes from the chain, so never isolated again
      create = (tx) => repository.create({ ...named, steps: options.steps as string[], isolateVocal: false }, tx);
      ref = (jobId) => ({ queue: "vocal-repair", payload: { jobId } });
    } else if (step.kind === "mastering") {
      const repository = new MasteringJobRepository(prisma);
      const target = { targetLufs: options.targetLufs as number, truePeakDb: options.truePeakDb as number };
      create = (tx) => repository.create({ ...named, ...target }, tx);
      ref = (jobId) => ({ queue: "mastering", payload: { jobId } });
    } else {
      const recombine = pipeline.steps[step.index + 1]?.step === "recombine";
      const separated = pipeline.steps.slice(0, step.index).findLast((s) => s.step === "separate");
      const backingSource = recombine && separated ? (await publishedKeys(prisma, separated)).backing : null;
      if (recombine && !backingSource)
        throw new JobFailure("permanent", `${stepName(step)}: the separation before it published no backing to recombine with`);
      const backingKey = backingSource ? await copyInput(pipeline.id, step, "backing", backingSource) : null;
      const repository = new VoiceConversionJobRepository(prisma);
      const voiceModelId = options.voiceModelId as number;
      create = async (tx) => {
        // checked at create; its owner may have deleted it since
        if (!(await tx.voiceModel.findUnique({ where: { id: voiceModelId }, select: { id: true } })))
          throw new JobFailure("permanent", `${stepName(step)} failed: voice model ${voiceModelId} no longer exists`);
        return repository.create(
          {
            ...common,
            voiceModelId,
            inputKey,
            inputFormat,
            backingKey,
            params: options.params as Prisma.InputJsonValue,
          },
          tx,
        );
      };
      ref = (jobId) => ({ queue: "voice-conversion", payload: { jobId } });
    }
    const { jobId, created } = await startPipelineStep(prisma, pipeline.id, step.index, create);
    if (created) {
      // The row is the job's durable record: a failed add is the reconciler's to make (enqueuedAt stays null).
      await queues
        .enqueue(ref(jobId))
        .then(() => tables[step.kind as StepKind].markEnqueued(jobId))
        .catch((err: Error) =>
          log.warn({ err: err.message, step: step.index, jobId }, "step's queue entry not added; the reconciler will"),
        );
      log.info({ step: step.index, name: step.step, kind: step.kind, jobId }, "pipeline step started");
    }
    return jobId;
  }

  /** Stops the step's running job (the pipeline was cancelled): its row ends `cancelled` and its worker is told. */
  async function cancelStep(step: { kind: string; jobId: number }, log: Logger): Promise<void> {
    const kind = step.kind as StepKind;
    if (await tables[kind].cancel(step.jobId).catch(() => false))
      await queues
        .announceCancel({ kind, rowId: step.jobId })
        .catch((err: Error) => log.warn({ err: err.message }, "step's cancel not announced; its worker notices the row"));
  }

  /** The pipeline with its steps' jobs as they are now; null while PostgreSQL is away (logged once an outage). */
  async function readNow(pipeline: PipelineWithSteps, log: Logger, outage: { away: boolean }): Promise<PipelineWithSteps | null> {
    try {
      const now = (await withStepJobs(prisma, [pipeline]))[0] ?? null;
      if (outage.away) log.info("PostgreSQL is back; the pipeline goes on");
      outage.away = false;
      return now;
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      if (!outage.away) log.warn("PostgreSQL is away; the pipeline waits for it");
      outage.away = true;
      return null;
    }
  }

  return {
    async run({ row, signal, log, setProgress }: JobContext<"pipeline">) {
      const total = row.steps.length;
      const outage = { away: false };
      let pipeline = row;
      for (const planned of row.steps) {
        let step = pipeline.steps[planned.index] as PipelineStepWithJob;
        if (step.job?.status === "success") continue;
        if (signal.aborted) throw signal.reason;
        const jobId = step.jobId ?? (await startStep(pipeline, step, log));
        // Wait for the step's job to end, the pipeline's progress following it.
        for (;;) {
          if (signal.aborted) {
            await cancelStep({ kind: step.kind, jobId }, log);
            throw signal.reason;
          }
          const now = await readNow(pipeline, log, outage);
          if (now) {
            pipeline = now;
            step = pipeline.steps[planned.index] as PipelineStepWithJob;
            if (!step.job)
              throw new JobFailure("permanent", `${stepName(step)} failed: its job (${step.kind} ${jobId}) was deleted`);
            if (step.job.status !== "running") break;
            await setProgress(Math.floor((step.index * 100 + step.job.progress) / total)).catch(() => undefined);
          }
          await sleep(deps.pollMs, undefined, { signal }).catch(() => undefined);
        }
        const { status, errorMessage } = step.job as NonNullable<PipelineStepWithJob["job"]>;
        if (status === "error")
          throw new JobFailure("permanent", `${stepName(step)} failed: ${errorMessage ?? "no reason given"}`);
        if (status === "cancelled") throw new JobFailure("permanent", `${stepName(step)} failed: its job was cancelled`);
        await setProgress(Math.floor(((step.index + 1) * 100) / total)).catch(() => undefined);
      }
      return {};
    },
  };
}

export const pipelineKind: WorkerKind<"pipeline"> = {
  start: ({ prisma, storage, queues, tables, config }) =>
    pipelineHandler({ prisma, storage, queues, tables, pollMs: config.PIPELINE_POLL_MS }),
};
