import type { JobKind, JobRef } from "@mixdown/jobs";
import type { JobStatus, Prisma, PrismaClient } from "../generated/prisma/client.ts";

/** A row the reconciler must keep queued, as `@mixdown/queue`'s ReconcileSource returns it. */
export interface RunningRow {
  ref: JobRef;
  enqueuedAt: Date | null;
  createdAt: Date;
}

/**
 * What the worker and the reconciler read and write for one job kind. Every write is conditioned
 * on the row still having work to do, so a retried or duplicated delivery never moves a finished
 * job again; the booleans say whether the write happened.
 */
export interface JobTable<Runnable, Output> {
  /** The row (with what the handler needs) when it still has work to do, else null (finished, cancelled, deleted). */
  findRunnable(rowId: number): Promise<Runnable | null>;
  /** The caller who owns the job (null for the public catalogue's models), for the job-ended announcement. */
  callerOf(runnable: Runnable): number | null;
  markStarted(rowId: number, firstAttempt: boolean): Promise<void>;
  /** Raises the row's progress (never lowers it). */
  setProgress(rowId: number, percent: number): Promise<void>;
  /** Publishes every output at once and ends the job `success`. */
  complete(rowId: number, output: Output): Promise<boolean>;
  /** Ends the job `error` with the reason. */
  fail(rowId: number, message: string): Promise<boolean>;
  /** Ends the job `cancelled`, publishing nothing. */
  cancel(rowId: number): Promise<boolean>;
  /** Rows with work to do created before `createdBefore`, in id order after `afterId`. */
  findRunning(createdBefore: Date, afterId: number, take: number): Promise<RunningRow[]>;
  isRunning(rowId: number): Promise<boolean>;
  markEnqueued(rowId: number): Promise<void>;
}

/**
 * The columns the job tables (SeparationJob, VoiceConversionJob, VoiceBlendJob, TtsJob) share:
 * `status`, `progress`, `errorMessage`, `enqueuedAt`, `createdAt`, `jobStartTime`, `jobEndTime`.
 * Prisma generates no common type for their delegates, hence this structural one.
 */
interface StatusTableDelegate {
  updateMany(args: { where: object; data: object }): PromiseLike<{ count: number }>;
  findUnique(args: {
    where: { id: number };
    select: { webhookUrl: true; apiKeyId: true };
  }): PromiseLike<{ webhookUrl: string | null; apiKeyId: number | null } | null>;
  count(args: { where: object }): PromiseLike<number>;
  findMany(args: {
    where: object;
    orderBy: object;
    take: number;
    select: object;
  }): PromiseLike<Array<{ id: number; enqueuedAt: Date | null; createdAt: Date }>>;
}
export type StatusTableModel = "separationJob" | "voiceConversionJob" | "voiceBlendJob" | "ttsJob";

const running = (id: number) => ({ id, status: "running" as const });

/** The catalogue kind whose rows each job table holds (the WebhookDelivery row names it). */
const KIND_OF_MODEL = {
  separationJob: "separation",
  voiceConversionJob: "voice-conversion",
  voiceBlendJob: "voice-blend",
  ttsJob: "tts",
} as const satisfies Record<StatusTableModel, JobKind>;

/**
 * Told the id of a WebhookDelivery once the transaction that ended its job has committed, to
 * queue it at once. Optional: without it (or when it fails) the reconciler queues the delivery
 * after RECONCILE_GRACE_SECONDS, since the outbox row is the source of truth.
 */
export type WebhookOwedListener = (deliveryId: number) => unknown;
export interface JobTableOptions {
  onWebhookOwed?: WebhookOwedListener;
}

/**
 * Ends a running row (`data` holds its end status and what it publishes) and, when the row
 * names a `webhookUrl`, writes its WebhookDelivery (the outbox), all within `tx`: an end and its
 * webhook commit together or not at all, whoever ends the row (worker, API cancel, reconciler).
 * Null when the row was no longer running (nothing changed).
 */
export async function endJobRow(
  tx: Prisma.TransactionClient,
  model: StatusTableModel,
  id: number,
  data: { status: Exclude<JobStatus, "running"> } & Record<string, unknown>,
): Promise<{ deliveryId: number | null } | null> {
  const table = tx[model] as unknown as StatusTableDelegate;
  const { count } = await table.updateMany({ where: running(id), data: { ...data, jobEndTime: new Date() } });
  if (count !== 1) return null;
  const row = await table.findUnique({ where: { id }, select: { webhookUrl: true, apiKeyId: true } });
  if (!row?.webhookUrl) return { deliveryId: null };
  const delivery = await tx.webhookDelivery.create({
    data: { jobKind: KIND_OF_MODEL[model], rowId: id, event: data.status, url: row.webhookUrl, apiKeyId: row.apiKeyId },
    select: { id: true },
  });
  return { deliveryId: delivery.id };
}

/** Runs `end` in a transaction, then tells `options.onWebhookOwed` of the delivery it wrote; true when the row ended. */
export async function endInTransaction(
  prisma: PrismaClient,
  options: JobTableOptions,
  end: (tx: Prisma.TransactionClient) => Promise<{ deliveryId: number | null } | null>,
): Promise<boolean> {
  const ended = await prisma.$transaction(end);
  if (ended?.deliveryId != null && options.onWebhookOwed) {
    // Committed already: a failed enqueue is the reconciler's to repair, not the end's to undo.
    await Promise.resolve()
      .then(() => options.onWebhookOwed!(ended.deliveryId!))
      .catch(() => undefined);
  }
  return ended !== null;
}

/**
 * The lifecycle writes of a job table with a `status` column, shared by every kind that has one;
 * a kind adds its own `findRunnable`, `callerOf` and `complete` (built on `endJobRow`, and may
 * wrap `fail`/`cancel`). Every end goes through `endJobRow`, which writes the job's webhook.
 * `refOf` builds the queue entry of a row the reconciler found (given the extra columns it selects).
 */
export function statusTable<Extra extends Record<string, true>>(
  prisma: PrismaClient,
  model: StatusTableModel,
  refOf: (row: { id: number } & Record<keyof Extra, unknown>) => JobRef,
  extraColumns?: Extra,
  options: JobTableOptions = {},
): Omit<JobTable<never, never>, "findRunnable" | "callerOf" | "complete"> {
  const table = prisma[model] as unknown as StatusTableDelegate;
  const end = (id: number, data: Parameters<typeof endJobRow>[3]) =>
    endInTransaction(prisma, options, (tx) => endJobRow(tx, model, id, data));
  return {
    async markStarted(id, firstAttempt) {
      await table.updateMany({
        where: running(id),
        data: firstAttempt ? { jobStartTime: new Date(), progress: 1 } : { progress: 1 },
      });
    },
    async setProgress(id, progress) {
      await table.updateMany({ where: { ...running(id), progress: { lt: progress } }, data: { progress } });
    },
    fail: (id, message) => end(id, { status: "error", errorMessage: message }),
    cancel: (id) => end(id, { status: "cancelled" }),
    async findRunning(createdBefore, afterId, take) {
      const rows = await table.findMany({
        where: { status: "running", createdAt: { lt: createdBefore }, id: { gt: afterId } },
        orderBy: { id: "asc" },
        take,
        select: { id: true, enqueuedAt: true, createdAt: true, ...extraColumns },
      });
      return rows.map((r) => ({
        ref: refOf(r as { id: number } & Record<keyof Extra, unknown>),
        enqueuedAt: r.enqueuedAt,
        createdAt: r.createdAt,
      }));
    },
    isRunning: async (id) => (await table.count({ where: running(id) })) > 0,
    async markEnqueued(id) {
      await table.updateMany({ where: { id }, data: { enqueuedAt: new Date() } });
    },
  };
}

/** The job table of every kind (see `createJobTables`); keyed by the catalogue, so a kind without one does not compile. */
export type JobTables<Types extends { [K in JobKind]: { runnable: unknown; output: unknown } }> = {
  [K in JobKind]: JobTable<Types[K]["runnable"], Types[K]["output"]>;
};
