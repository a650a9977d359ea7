import type { Prisma, PrismaClient, VoiceBlendJob, VoiceModel } from "../generated/prisma/client.ts";
import { endInTransaction, endJobRow, statusTable, type JobTable, type JobTableOptions } from "./job-table.ts";

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

/**
 * What the worker and the reconciler read and write for a voice blender job. A job that ends
 * other than `success` (error, cancelled) takes its pending output model to `failed` with it.
 */
export function voiceBlendJobTable(
  prisma: PrismaClient,
  options: JobTableOptions = {},
): JobTable<RunnableVoiceBlend, VoiceBlendOutput> {
  const refOf = (r: { id: number }) => ({ queue: "voice-blend" as const, payload: { jobId: r.id } });
  // The job, its model and its webhook end together, in one transaction.
  const endWithOutputModel = (id: number, data: Parameters<typeof endJobRow>[3]): Promise<boolean> =>
    endInTransaction(prisma, options, async (tx) => {
      const ended = await endJobRow(tx, "voiceBlendJob", id, data);
      if (!ended) return null;
      const job = await tx.voiceBlendJob.findUniqueOrThrow({ where: { id }, select: { outputModelId: true } });
      await tx.voiceModel.updateMany({ where: { id: job.outputModelId, state: "pending" }, data: { state: "failed" } });
      return ended;
    });
  return {
    ...statusTable(prisma, "voiceBlendJob", refOf, undefined, options),
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
        const ended = await endJobRow(tx, "voiceBlendJob", id, { status: "success", progress: 100, errorMessage: null });
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
