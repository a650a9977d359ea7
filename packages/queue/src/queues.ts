import { Queue, type JobsOptions } from "bullmq";
import { Redis } from "ioredis";
import { cancelChannel, type CancelNotice } from "./job-cancels.ts";
import { bullJobId, bullJobName, JOB_CATALOGUE, JOB_KINDS, rowIdOf, type JobKind, type JobRef } from "./jobs.ts";

export interface QueueOptions {
  /** A Redis URL (a connection is opened and owned) or an ioredis client (shared, not closed). */
  connection: string | Redis;
  /** BullMQ key prefix (QUEUE_PREFIX). */
  prefix: string;
  /** Tries per job before it fails for good (JOB_ATTEMPTS). */
  attempts: number;
  /** First retry delay of every kind (tests); doubled on each further retry. */
  backoffDelayMs?: number;
  /** First retry delay of some kinds (WEBHOOK_RETRY_DELAY_MS for `webhook-delivery`); wins over `backoffDelayMs`. */
  backoffDelayMsByKind?: Partial<Record<JobKind, number>>;
  /**
   * Connection errors (Redis down, reconnecting). Reported at most once per 10 s; without a
   * handler they are ignored here (readiness checks report an unreachable Redis).
   */
  onError?: (error: Error) => void;
}

/**
 * Retry and retention policy of a kind's jobs: its catalogue entry's tries (or JOB_ATTEMPTS) and
 * backoff, unless `backoffDelayMs` overrides the delay (tests).
 */
export function defaultJobOptions(kind: JobKind, configuredAttempts: number, backoffDelayMs?: number): JobsOptions {
  const { retry } = JOB_CATALOGUE[kind];
  return {
    attempts: retry.attempts === "configured" ? configuredAttempts : retry.attempts,
    backoff: { type: "exponential", delay: backoffDelayMs ?? retry.backoffDelayMs },
    // Finished entries are kept a while for inspection; the rows in Postgres are the record.
    removeOnComplete: { age: 24 * 3600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
  };
}

export interface EnqueueOptions {
  /** BullMQ priority, 1 (first) and up; clamped to BullMQ's largest, 2^21. Undefined: none. */
  priority?: number | undefined;
}

/** BullMQ's largest priority. */
export const MAX_PRIORITY = 2 ** 21;

function clampPriority(priority: number): number {
  return Math.min(MAX_PRIORITY, Math.max(1, Math.round(priority)));
}

/** One BullMQ queue per job kind, over one Redis connection. */
export class JobQueues {
  readonly connection: Redis;
  readonly prefix: string;
  private readonly queues: ReadonlyMap<JobKind, Queue>;
  private readonly ownsConnection: boolean;

  constructor(options: QueueOptions) {
    this.ownsConnection = typeof options.connection === "string";
    this.connection =
      typeof options.connection === "string"
        ? new Redis(options.connection, { maxRetriesPerRequest: 3, connectTimeout: 5_000, lazyConnect: false })
        : options.connection;
    this.prefix = options.prefix;
    this.queues = new Map(
      JOB_KINDS.map((kind) => [
        kind,
        new Queue(kind, {
          connection: this.connection,
          prefix: options.prefix,
          defaultJobOptions: defaultJobOptions(
            kind,
            options.attempts,
            options.backoffDelayMsByKind?.[kind] ?? options.backoffDelayMs,
          ),
        }),
      ]),
    );
    let lastReport = 0;
    const report = (error: Error) => {
      if (!options.onError || Date.now() - lastReport < 10_000) return;
      lastReport = Date.now();
      options.onError(error);
    };
    // An 'error' event without a listener would crash the process.
    if (this.ownsConnection) this.connection.on("error", report);
    for (const queue of this.queues.values()) queue.on("error", report);
  }

  /** The BullMQ queue of a kind. */
  queue(kind: JobKind): Queue {
    return this.queues.get(kind)!;
  }

  /**
   * Adds a row's queue entry. The BullMQ id comes from the row id, so a second add of the same
   * row while its entry exists is a no-op. An entry without `priority` is taken before every
   * prioritized one (BullMQ serves its wait list first); among prioritized entries the lowest
   * number goes first, which is how a batch's jobs take turns with other callers' (see
   * `docs/ARCHITECTURE.md`, Batches).
   */
  async enqueue(ref: JobRef, options: EnqueueOptions = {}): Promise<string> {
    const id = bullJobId(ref.queue, rowIdOf(ref));
    const priority = options.priority === undefined ? {} : { priority: clampPriority(options.priority) };
    await this.queue(ref.queue).add(bullJobName(ref), ref.payload, { jobId: id, ...priority });
    return id;
  }

  /**
   * After a row was cancelled: tells every worker (the one running it aborts it) and removes the
   * entry if it is still waiting, so no worker picks it up (one that does finds the row ended).
   * An active entry is locked and stays; its worker completes it once the job has stopped.
   */
  async announceCancel(notice: CancelNotice): Promise<void> {
    await this.connection.publish(cancelChannel(this.prefix), JSON.stringify(notice));
    await this.queue(notice.kind).remove(bullJobId(notice.kind, notice.rowId));
  }

  /**
   * Removes a row's entry (waiting, delayed, completed or failed) once its row is deleted, so
   * nothing of a deleted job stays in Redis; an active entry is locked and stays until its worker,
   * which finds the row gone, completes it.
   */
  async removeEntry(kind: JobKind, rowId: number): Promise<void> {
    await this.queue(kind).remove(bullJobId(kind, rowId));
  }

  /** Resolves when Redis answers (readiness checks). */
  async ping(): Promise<void> {
    const answer = await this.connection.ping();
    if (answer !== "PONG") throw new Error(`unexpected PING answer: ${answer}`);
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    if (this.ownsConnection) await this.connection.quit().catch(() => this.connection.disconnect());
  }
}

export function createQueues(options: QueueOptions): JobQueues {
  return new JobQueues(options);
}
