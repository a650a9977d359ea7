import type { Prisma, PrismaClient, VoiceBlendJob, VoiceModel } from "../../generated/prisma/client.ts";
import { poolOf } from "../../client.ts";
import {
  endInTransaction,
  endJobRow,
  groupByStatus,
  statusTable,
  type JobTable,
  type JobTableOptions,
  type JobTableRows,
  type OwnedStorage,
} from "../job-table.ts";
import { readPage, type Page, type PageRequest } from "../paging.ts";

export interface RunnableVoiceBlend {
  job: VoiceBlendJob;
  /** The blended models in job order (model1 first), each with its share. */
  inputs: Array<{ model: VoiceModel; alpha: number }>;
}

export interface VoiceBlendOutput {
  /** Storage key of the written model file (`voice-models/<outputModelId>/model.onnx`). */
  fileKey: string;
  /** Extra facts for the output model's metadata (e.g. tables cut to fewer speakers). */
  details?: Record<string, unknown>;
}

export interface NewVoiceBlendJob {
  callerId: number;
  /** 2 to 4 model ids, in order. */
  modelIds: number[];
  /** One share per model, in the same order (the last one already computed). */
  alphas: number[];
  title: string;
  /** Copied from the first model onto the output model. */
  architecture: string;
  sampleRate: number;
  /** The output model is an instrument model (a blend of instruments only). */
  instrument?: boolean;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
}

/** Voice blender rows and the output voice model each one creates. */
export class VoiceBlendJobRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Creates the output voice model (state `pending`, owned by the caller) and the blend job in
   * one transaction: either both exist or neither.
   */
  create(input: NewVoiceBlendJob): Promise<{ job: VoiceBlendJob; outputModel: VoiceModel }> {
    const [m1, m2, m3, m4] = input.modelIds;
    const [a1, a2, a3, a4] = input.alphas;
    return this.prisma.$transaction(async (tx) => {
      const outputModel = await tx.voiceModel.create({
        data: {
          ownerId: input.callerId,
          title: input.title,
          architecture: input.architecture,
          sampleRate: input.sampleRate,
          instrument: input.instrument === true,
          state: "pending",
          metadata: { blend: { modelIds: input.modelIds, alphas: input.alphas } },
        },
      });
      const job = await tx.voiceBlendJob.create({
        data: {
          callerId: input.callerId,
          webhookUrl: input.webhookUrl ?? null,
          apiKeyId: input.apiKeyId ?? null,
          model1Id: m1!,
          model2Id: m2!,
          model3Id: m3 ?? null,
          model4Id: m4 ?? null,
          alpha: a1!,
          alpha2: a2!,
          alpha3: a3 ?? null,
          alpha4: a4 ?? null,
          title: input.title,
          outputModelId: outputModel.id,
          status: "running",
        },
      });
      return { job, outputModel };
    });
  }

  async findForCaller(callerId: number, id: number): Promise<VoiceBlendJob | null> {
    const row = await this.findById(id);
    return row?.callerId === callerId ? row : null;
  }

  listForCaller(callerId: number, page: PageRequest): Promise<Page<VoiceBlendJob>> {
    return readPage<VoiceBlendJob>(poolOf(this.prisma), "VoiceBlendJob", [{ column: "callerId", value: callerId }], page);
  }

  findById(id: number): Promise<VoiceBlendJob | null> {
    return this.prisma.voiceBlendJob.findUnique({ where: { id } });
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.voiceBlendJob.updateMany({ where: { id, enqueuedAt: null }, data: { enqueuedAt: new Date() } });
  }

  count(where: { callerId?: number } = {}): Promise<number> {
    return this.prisma.voiceBlendJob.count({ where });
  }
}

const TABLE = { kind: "voice-blend", model: "voiceBlendJob" } as const;

/**
 * What the worker and the reconciler read and write for a voice blender job. A job that ends
 * other than `success` (error, cancelled) takes its pending output model to `failed` with it.
 */
function voiceBlendJobTable(prisma: PrismaClient, options: JobTableOptions = {}): JobTable<RunnableVoiceBlend, VoiceBlendOutput> {
  const refOf = (r: { id: number }) => ({ queue: "voice-blend" as const, payload: { jobId: r.id } });
  // The job, its model and its webhook end together, in one transaction.
  const endWithOutputModel = (id: number, data: Parameters<typeof endJobRow>[3]): Promise<boolean> =>
    endInTransaction(prisma, options, async (tx) => {
      const ended = await endJobRow(tx, TABLE, id, data);
      if (!ended) return null;
      const job = await tx.voiceBlendJob.findUniqueOrThrow({ where: { id }, select: { outputModelId: true } });
      await tx.voiceModel.updateMany({ where: { id: job.outputModelId, state: "pending" }, data: { state: "failed" } });
      return ended;
    });
  return {
    ...statusTable(prisma, TABLE, refOf, undefined, options),
    fail: (id, message) => endWithOutputModel(id, { status: "error", errorMessage: message }),
    cancel: (id) => endWithOutputModel(id, { status: "cancelled" }),
    callerOf: (runnable) => runnable.job.callerId,

    /** The job and its input models; a missing input model is left out of `inputs`. */
    async findRunnable(id) {
      const job = await prisma.voiceBlendJob.findFirst({ where: { id, status: "running" } });
      if (!job) return null;
      const ids = [job.model1Id, job.model2Id, job.model3Id, job.model4Id];
      const alphas = [job.alpha, job.alpha2, job.alpha3, job.alpha4];
      const rows = await prisma.voiceModel.findMany({ where: { id: { in: ids.filter((m): m is number => m !== null) } } });
      const byId = new Map(rows.map((m) => [m.id, m]));
      const inputs: RunnableVoiceBlend["inputs"] = [];
      ids.forEach((modelId, i) => {
        const model = modelId === null ? undefined : byId.get(modelId);
        if (model) inputs.push({ model, alpha: alphas[i] ?? 0 });
      });
      return { job, inputs };
    },

    /**
     * Publishes the output model (file, `ready`, architecture, sample rate and metadata of model 1)
     * and ends the job `success`, in one transaction.
     */
    complete(id, output) {
      return endInTransaction(prisma, options, async (tx) => {
        // A blend processes no audio: it counts as a job of 0 seconds.
        const ended = await endJobRow(
          tx,
          TABLE,
          id,
          { status: "success", progress: 100, errorMessage: null },
          { kind: "voice_blend", seconds: 0 },
        );
        if (!ended) return null;
        const job = await tx.voiceBlendJob.findUniqueOrThrow({ where: { id } });
        const [first, target] = await Promise.all([
          tx.voiceModel.findUnique({ where: { id: job.model1Id } }),
          tx.voiceModel.findUniqueOrThrow({ where: { id: job.outputModelId } }),
        ]);
        // Model 1's parameters (f0, ...) carry over; its files (feature index, ...) belong to that voice alone.
        const inherited = Object.fromEntries(Object.entries(asObject(first?.metadata)).filter(([key]) => !/Key$/.test(key)));
        const metadata = {
          ...inherited,
          blend: { ...asObject(asObject(target.metadata).blend as Prisma.JsonValue), ...output.details },
        };
        await tx.voiceModel.update({
          where: { id: job.outputModelId },
          data: {
            fileKey: output.fileKey,
            state: "ready",
            ...(first ? { architecture: first.architecture, sampleRate: first.sampleRate } : {}),
            metadata: metadata as Prisma.InputJsonValue,
          },
        });
        return ended;
      });
    },
  };
}

function asObject(value: Prisma.JsonValue | undefined): Record<string, unknown> {
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/**
 * What a voice blend row owns in storage by itself: nothing. Its one product is its output voice
 * model, whose files are the model's (`voiceModelStorage`); deleting the job deletes that model.
 */
export function voiceBlendStorage(): OwnedStorage {
  return { keys: [], prefixes: [] };
}

/** The `voice-blend` kind's rows: what the worker, the reconciler, /metrics and webhooks read and write. */
export const voiceBlendRows: JobTableRows<"voice-blend", RunnableVoiceBlend, VoiceBlendOutput, VoiceBlendJob> = {
  kind: "voice-blend",
  model: TABLE.model,
  table: voiceBlendJobTable,
  countByStatus: async (prisma) => {
    const groups = await prisma.voiceBlendJob.groupBy({ by: ["status"], _count: { _all: true } });
    return groupByStatus(groups, "voice_blend");
  },
  owned: async (prisma, id) => {
    const row = await prisma.voiceBlendJob.findUnique({ where: { id } });
    return (
      row && {
        callerId: row.callerId,
        status: row.status,
        recordKind: "voice_blend",
        storage: voiceBlendStorage(),
        outputModelId: row.outputModelId,
      }
    );
  },
  webhookRow: (prisma, id) => prisma.voiceBlendJob.findUnique({ where: { id } }),
  // a blend's output is a voice model, whose files are the model's, not the job's
  files: null,
};
