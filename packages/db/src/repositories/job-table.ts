import type { JobKind, JobRef, JobTableKind, RecordKind } from "@mixdown/jobs";
import type { JobStatus, Prisma, PrismaClient } from "../generated/prisma/client.ts";
import type { JobFiles } from "./job-files.ts";

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
  updateManyAndReturn(args: { where: object; data: object; select: object }): PromiseLike<Array<ChangedRow & EndedRow>>;
  count(args: { where: object }): PromiseLike<number>;
  findMany(args: {
    where: object;
    orderBy: object;
    take: number;
    select: object;
  }): PromiseLike<Array<{ id: number; enqueuedAt: Date | null; createdAt: Date }>>;
}

type ModelKey = Uncapitalize<Prisma.ModelName>;
/** The Prisma models that are job tables: those with a `status`, a `progress` and an `enqueuedAt` column (derived from the schema). */
export type StatusTableModel = {
  [M in ModelKey]: PrismaClient[M] extends { fields: { status: unknown; progress: unknown; enqueuedAt: unknown } } ? M : never;
}[ModelKey];

/**
 * A job table: its catalogue kind (which its WebhookDelivery rows name) and its Prisma model;
 * `kindColumn` when its rows are of several record kinds, named by that column (the separation
 * table's `kind`).
 */
export interface StatusTableRef {
  kind: JobTableKind;
  model: StatusTableModel;
  kindColumn?: "kind";
}

/**
 * A job row's status or progress as a write left it: what `JobTableOptions.onChange` hears after
 * the write (an end: after its transaction's commit), wherever the write happened (worker, API
 * cancel, reconciler). `@mixdown/queue`'s job events carry it to the API's event streams.
 */
export interface JobChange {
  kind: JobTableKind;
  recordKind: RecordKind;
  rowId: number;
  callerId: number;
  status: JobStatus;
  progress: number;
}
export type JobChangeListener = (change: JobChange) => unknown;

/** The columns a change is read from, returned by the write itself (no second query). */
interface ChangedRow {
  id: number;
  callerId: number;
  status: JobStatus;
  progress: number;
  kind?: string;
}
interface EndedRow {
  webhookUrl: string | null;
  apiKeyId: number | null;
}
const changeColumns = (ref: StatusTableRef) => ({
  id: true,
  callerId: true,
  status: true,
  progress: true,
  ...(ref.kindColumn ? { [ref.kindColumn]: true } : {}),
});
function changeOf(ref: StatusTableRef, row: ChangedRow): JobChange {
  const recordKind = (ref.kindColumn ? row.kind : ref.kind.replaceAll("-", "_")) as RecordKind;
  return { kind: ref.kind, recordKind, rowId: row.id, callerId: row.callerId, status: row.status, progress: row.progress };
}

/** Tells `listener` of each change; a listener's failure is its own (the write has happened). */
function announceChanges(options: JobTableOptions, changes: JobChange[]): void {
  const listener = options.onChange;
  if (!listener) return;
  for (const change of changes) {
    void Promise.resolve()
      .then(() => listener(change))
      .catch(() => undefined);
  }
}

const running = (id: number) => ({ id, status: "running" as const });

/**
 * Told the id of a WebhookDelivery once the transaction that ended its job has committed, to
 * queue it at once. Optional: without it (or when it fails) the reconciler queues the delivery
 * after RECONCILE_GRACE_SECONDS, since the outbox row is the source of truth.
 */
export type WebhookOwedListener = (deliveryId: number) => unknown;
export interface JobTableOptions {
  onWebhookOwed?: WebhookOwedListener;
  /** Told of every start, progress and end a table writes (see `JobChange`). */
  onChange?: JobChangeListener;
}

/** What a job that ends `success` counts in its key's usage: its record kind and seconds of audio (null: unknown, counted as 0). */
export interface UsageOfJob {
  kind: RecordKind;
  seconds: number | null;
}

/**
 * Ends a running row (`data` holds its end status and what it publishes) and, when the row
 * names a `webhookUrl`, writes its WebhookDelivery (the outbox), all within `tx`: an end and its
 * webhook commit together or not at all, whoever ends the row (worker, API cancel, reconciler).
 * A `success` given `usage` also writes the job's UsageRecord in the same transaction: the row
 * ends once, and the record is unique per job, so a retried or redelivered job counts once.
 * Null when the row was no longer running (nothing changed).
 */
export async function endJobRow(
  tx: Prisma.TransactionClient,
  { kind, model, kindColumn }: StatusTableRef,
  id: number,
  data: { status: Exclude<JobStatus, "running"> } & Record<string, unknown>,
  usage?: UsageOfJob,
): Promise<EndedJob | null> {
  const ref = { kind, model, ...(kindColumn ? { kindColumn } : {}) };
  const table = tx[model] as unknown as StatusTableDelegate;
  const [row] = await table.updateManyAndReturn({
    where: running(id),
    data: { ...data, jobEndTime: new Date() },
    select: { ...changeColumns(ref), webhookUrl: true, apiKeyId: true },
  });
  if (!row) return null;
  const change = changeOf(ref, row);
  if (usage && data.status === "success") {
    await tx.usageRecord.createMany({
      data: [{ jobKind: usage.kind, rowId: id, callerId: row.callerId, apiKeyId: row.apiKeyId, seconds: usage.seconds ?? 0 }],
      skipDuplicates: true,
    });
  }
  if (!row.webhookUrl) return { deliveryId: null, change };
  const delivery = await tx.webhookDelivery.create({
    data: { jobKind: kind, rowId: id, event: data.status, url: row.webhookUrl, apiKeyId: row.apiKeyId },
    select: { id: true },
  });
  return { deliveryId: delivery.id, change };
}

/** A row `endJobRow` ended: the webhook delivery it wrote (null: none) and the change it made. */
export interface EndedJob {
  deliveryId: number | null;
  change: JobChange;
}

/**
 * Runs `end` in a transaction, then tells `options.onChange` of the end and `options.onWebhookOwed`
 * of the delivery it wrote; true when the row ended.
 */
export async function endInTransaction(
  prisma: PrismaClient,
  options: JobTableOptions,
  end: (tx: Prisma.TransactionClient) => Promise<EndedJob | null>,
): Promise<boolean> {
  const ended = await prisma.$transaction(end);
  if (ended) announceChanges(options, [ended.change]);
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
  ref: StatusTableRef,
  refOf: (row: { id: number } & Record<keyof Extra, unknown>) => JobRef,
  extraColumns?: Extra,
  options: JobTableOptions = {},
): Omit<JobTable<never, never>, "findRunnable" | "callerOf" | "complete"> {
  const table = prisma[ref.model] as unknown as StatusTableDelegate;
  const end = (id: number, data: Parameters<typeof endJobRow>[3]) =>
    endInTransaction(prisma, options, (tx) => endJobRow(tx, ref, id, data));
  return {
    async markStarted(id, firstAttempt) {
      const rows = await table.updateManyAndReturn({
        where: running(id),
        data: firstAttempt ? { jobStartTime: new Date(), progress: 1 } : { progress: 1 },
        select: changeColumns(ref),
      });
      announceChanges(
        options,
        rows.map((row) => changeOf(ref, row)),
      );
    },
    async setProgress(id, progress) {
      const rows = await table.updateManyAndReturn({
        where: { ...running(id), progress: { lt: progress } },
        data: { progress },
        select: changeColumns(ref),
      });
      announceChanges(
        options,
        rows.map((row) => changeOf(ref, row)),
      );
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

/**
 * Everything the database side knows of one job table kind, in that kind's own file under
 * `kinds/`: its job table (the worker's and the reconciler's reads and writes), its counts for
 * /metrics and its row as a webhook presents it. `kinds/index.ts` lists one per job table kind of
 * the catalogue, so a kind without its rows does not compile.
 */
export interface JobTableRows<K extends JobTableKind, Runnable, Output, WebhookRow> {
  kind: K;
  /** The Prisma model of the kind's rows (what a deletion deletes the row from). */
  model: StatusTableModel;
  table(prisma: PrismaClient, options?: JobTableOptions): JobTable<Runnable, Output>;
  /** Jobs by record kind and status, for /metrics: a grouped count over the table's status index. */
  countByStatus(prisma: PrismaClient): Promise<JobCount[]>;
  /**
   * The job as a deletion sees it (`ResourceDeletions`): its owner, status, record kind (its
   * IdempotencyKey rows name it so) and every storage key and prefix the row owns; null when the
   * row is gone. Each kind says what it owns here, and only here.
   */
  owned(prisma: PrismaClient, id: number): Promise<OwnedJob | null>;
  /** The ended job as its webhook presents it (the catalogue entry's `record`); null when the row is gone. */
  webhookRow(prisma: PrismaClient, id: number): Promise<WebhookRow | null>;
  /** The files its rows keep in object storage (retention, deletion); null for a kind that stores none. */
  files: JobFiles | null;
}

/**
 * The stored files a row owns: whole keys (its uploads) and prefixes (with their trailing slash:
 * its outputs' folder), as `ObjectStorage.delete` and `deletePrefix` take them.
 */
export interface OwnedStorage {
  keys: string[];
  prefixes: string[];
}

/** A job as `JobTableRows.owned` reads it for a deletion. */
export interface OwnedJob {
  callerId: number;
  status: JobStatus;
  /** The record kind its IdempotencyKey rows name (`resourceKind`). */
  recordKind: RecordKind;
  storage: OwnedStorage;
  /**
   * A voice blend's output model: the job's only product, deleted with it (and the job with the
   * model: the row's foreign key cascades).
   */
  outputModelId?: number;
}

export interface JobCount {
  kind: RecordKind;
  status: JobStatus;
  count: number;
}

/** A `groupBy(["status"])` of a table of one record kind, as counts. */
export function groupByStatus(groups: Array<{ status: JobStatus; _count: { _all: number } }>, kind: RecordKind): JobCount[] {
  return groups.map((g) => ({ kind, status: g.status, count: g._count._all }));
}
