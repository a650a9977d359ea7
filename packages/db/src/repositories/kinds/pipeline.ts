import type { JobStatus, Pipeline, PipelineStep, Prisma, PrismaClient } from "../../generated/prisma/client.ts";
import { jobOutputKeys } from "@mixdown/jobs";
import { poolOf } from "../../client.ts";
import { endInTransaction, endJobRow, groupByStatus, statusTable, type JobTableRows, type OwnedStorage } from "../job-table.ts";
import { readPage, type Page, type PageRequest } from "../paging.ts";
import { ownedStorage, type JobFiles } from "../job-files.ts";

export interface NewPipelineStep {
  step: string;
  kind: string;
  options: Prisma.InputJsonValue;
}

export interface NewPipeline {
  callerId: number;
  preset?: string | null;
  inputType: string;
  inputKey: string;
  inputFormat: string;
  inputFileName?: string | null;
  audioSeconds?: number | null;
  webhookUrl?: string | null;
  apiKeyId?: number | null;
  steps: NewPipelineStep[];
}

/** A step's job as the pipeline's record and its worker read it (null: the step has not started). */
export interface StepJobState {
  status: JobStatus;
  progress: number;
  errorMessage: string | null;
}

export type PipelineStepWithJob = PipelineStep & { job: StepJobState | null };
export type PipelineWithSteps = Pipeline & { steps: PipelineStepWithJob[] };

/** The step kinds' tables, read by id (a step runs as a separation, a vocal repair, a conversion or a mastering). */
async function stepJobStates(prisma: PrismaClient, steps: PipelineStep[]): Promise<Map<string, StepJobState>> {
  const idsOf = (kind: string) => ({
    where: { id: { in: steps.filter((s) => s.kind === kind && s.jobId !== null).map((s) => s.jobId as number) } },
    select: { id: true, status: true, progress: true, errorMessage: true },
  });
  const tables = await Promise.all([
    prisma.separationJob.findMany(idsOf("separation")).then((rows) => ["separation", rows] as const),
    prisma.vocalRepairJob.findMany(idsOf("vocal-repair")).then((rows) => ["vocal-repair", rows] as const),
    prisma.voiceConversionJob.findMany(idsOf("voice-conversion")).then((rows) => ["voice-conversion", rows] as const),
    prisma.masteringJob.findMany(idsOf("mastering")).then((rows) => ["mastering", rows] as const),
  ]);
  const states = new Map<string, StepJobState>();
  for (const [kind, rows] of tables) for (const { id, ...state } of rows) states.set(`${kind}:${id}`, state);
  return states;
}

/** Each pipeline with its steps in order, each step with its job's status (null: not started, or the job was deleted). */
export async function withStepJobs(prisma: PrismaClient, pipelines: Pipeline[]): Promise<PipelineWithSteps[]> {
  const steps = await prisma.pipelineStep.findMany({
    where: { pipelineId: { in: pipelines.map((p) => p.id) } },
    orderBy: [{ pipelineId: "asc" }, { index: "asc" }],
  });
  const states = await stepJobStates(prisma, steps);
  return pipelines.map((pipeline) => ({
    ...pipeline,
    steps: steps
      .filter((s) => s.pipelineId === pipeline.id)
      .map((s) => ({ ...s, job: s.jobId === null ? null : (states.get(`${s.kind}:${s.jobId}`) ?? null) })),
  }));
}

/** Pipeline rows as the API creates and reads them. */
export class PipelineRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Writes the row and its steps (with `db`: inside that transaction, as a quota's admission does). */
  async create({ steps, ...input }: NewPipeline, db: Prisma.TransactionClient = this.prisma): Promise<PipelineWithSteps> {
    const row = await db.pipeline.create({
      data: { ...input, status: "running", steps: { create: steps.map((s, index) => ({ ...s, index })) } },
      include: { steps: { orderBy: { index: "asc" } } },
    });
    return { ...row, steps: row.steps.map((s) => ({ ...s, job: null })) };
  }

  async findForCaller(callerId: number, id: number): Promise<PipelineWithSteps | null> {
    const row = await this.prisma.pipeline.findUnique({ where: { id } });
    if (row?.callerId !== callerId) return null;
    const [withSteps] = await withStepJobs(this.prisma, [row]);
    return withSteps ?? null;
  }

  async listForCaller(callerId: number, page: PageRequest): Promise<Page<PipelineWithSteps>> {
    const { rows, total } = await readPage<Pipeline>(
      poolOf(this.prisma),
      "Pipeline",
      [{ column: "callerId", value: callerId }],
      page,
    );
    return { rows: await withStepJobs(this.prisma, rows), total };
  }

  /** The jobs of a pipeline's started steps (what a cancel of the pipeline cancels too). */
  async stepJobs(id: number): Promise<Array<{ kind: string; jobId: number }>> {
    const steps = await this.prisma.pipelineStep.findMany({ where: { pipelineId: id, jobId: { not: null } } });
    return steps.map((s) => ({ kind: s.kind, jobId: s.jobId as number }));
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.pipeline.updateMany({ where: { id, enqueuedAt: null }, data: { enqueuedAt: new Date() } });
  }

  count(where: { callerId?: number } = {}): Promise<number> {
    return this.prisma.pipeline.count({ where });
  }
}

/**
 * Runs a step's job into being once: `create` writes the job's row inside a transaction that also
 * records its id on the step, only while the step has none. Returns the step's job id: the one
 * just created, or the one an earlier attempt created (and `create`'s row is rolled back).
 */
export async function startPipelineStep(
  prisma: PrismaClient,
  pipelineId: number,
  index: number,
  create: (tx: Prisma.TransactionClient) => Promise<{ id: number }>,
): Promise<{ jobId: number; created: boolean }> {
  const earlier = async () => {
    const step = await prisma.pipelineStep.findUniqueOrThrow({ where: { pipelineId_index: { pipelineId, index } } });
    return step.jobId;
  };
  const existing = await earlier();
  // null: the pipeline was deleted meanwhile
  if (existing !== null) return { jobId: existing, created: false };
  const created = await prisma
    .$transaction(async (tx) => {
      const job = await create(tx);
      const { count } = await tx.pipelineStep.updateMany({
        // only while the pipeline runs: a cancelled or deleted pipeline starts no step
        where: { pipelineId, index, jobId: null, pipeline: { is: { status: "running" } } },
        data: { jobId: job.id },
      });
      if (count !== 1) throw new StepAlreadyStarted();
      return job.id;
    })
    .catch((error: unknown) => {
      if (error instanceof StepAlreadyStarted) return null;
      throw error;
    });
  if (created !== null) return { jobId: created, created: true };
  return { jobId: (await earlier()) as number, created: false };
}

class StepAlreadyStarted extends Error {}

const TABLE = { kind: "pipeline", model: "pipeline" } as const;

/** What a pipeline row owns in storage: its upload (its steps' files are their jobs'). */
const FILES: JobFiles = {
  table: "Pipeline",
  inputColumns: ["inputKey"],
  outputColumns: [],
  outputListColumns: [],
  kindColumns: [],
  recordKind: () => "pipeline",
  outputPrefix: (row) => jobOutputKeys("pipeline", row.id).prefix,
};

export function pipelineStorage(row: Pipeline): OwnedStorage {
  return ownedStorage(FILES, row);
}

/** The `pipeline` kind's rows: what the worker, the reconciler, /metrics and webhooks read and write. */
export const pipelineRows: JobTableRows<"pipeline", PipelineWithSteps, Record<string, never>, PipelineWithSteps> = {
  kind: "pipeline",
  model: TABLE.model,
  table: (prisma, options = {}) => ({
    ...statusTable(prisma, TABLE, (r) => ({ queue: "pipeline", payload: { jobId: r.id } }), undefined, options),
    findRunnable: async (id) => {
      const row = await prisma.pipeline.findFirst({ where: { id, status: "running" } });
      return row && ((await withStepJobs(prisma, [row]))[0] ?? null);
    },
    callerOf: (row) => row.callerId,
    // Each step's job counts its own usage; the pipeline counts none of its own.
    complete: (id) =>
      endInTransaction(prisma, options, (tx) =>
        endJobRow(tx, TABLE, id, { status: "success", progress: 100, errorMessage: null }),
      ),
  }),
  countByStatus: async (prisma) => {
    const groups = await prisma.pipeline.groupBy({ by: ["status"], _count: { _all: true } });
    return groupByStatus(groups, "pipeline");
  },
  owned: async (prisma, id) => {
    const row = await prisma.pipeline.findUnique({ where: { id } });
    return row && { callerId: row.callerId, status: row.status, recordKind: "pipeline", storage: pipelineStorage(row) };
  },
  webhookRow: async (prisma, id) => {
    const row = await prisma.pipeline.findUnique({ where: { id } });
    return row && ((await withStepJobs(prisma, [row]))[0] ?? null);
  },
  files: FILES,
};
