import { Queue, Worker, type Job } from "bullmq";
import type { Redis } from "ioredis";

/**
 * The service's own periodic work, beside the job kinds: the retention sweep (RETENTION_*). Not a
 * kind of the catalogue, as it works on no row of its own: a BullMQ job scheduler adds one entry
 * every `everyMs` to the `maintenance` queue, whose global concurrency of 1 lets one worker run it
 * at a time however many serve it. A worker killed mid-task loses its lock; the entry is then run
 * again by another worker (or by the next one scheduled), so a task must be safe to run again.
 */
export const MAINTENANCE_QUEUE = "maintenance";
export const MAINTENANCE_TASKS = ["retention-sweep"] as const;
export type MaintenanceTask = (typeof MAINTENANCE_TASKS)[number];

export interface MaintenanceOptions {
  /** A connection for the worker (BullMQ needs `maxRetriesPerRequest: null`); shared, not closed. */
  connection: Redis;
  prefix: string;
  /** How often each task runs (its scheduler's `every`), by task. */
  everyMs: Record<MaintenanceTask, number>;
  /** Runs a task; `signal` aborts when the worker stops (the task then returns early). */
  run(task: MaintenanceTask, signal: AbortSignal): Promise<unknown>;
  lockDurationMs: number;
  stalledIntervalMs: number;
  onError?: (error: Error) => void;
}

export interface Maintenance {
  queue: Queue;
  worker: Worker;
  close(): Promise<void>;
}

/**
 * Schedules the maintenance tasks (an upsert: every worker's start leaves one scheduler per task,
 * its interval the last one set) and serves them, one at a time across all workers.
 */
export async function startMaintenance(options: MaintenanceOptions): Promise<Maintenance> {
  const { connection, prefix } = options;
  const queue = new Queue(MAINTENANCE_QUEUE, { connection, prefix });
  queue.on("error", (err) => options.onError?.(err));
  await queue.setGlobalConcurrency(1);
  for (const task of MAINTENANCE_TASKS)
    await queue.upsertJobScheduler(
      task,
      { every: options.everyMs[task] },
      {
        name: task,
        // A failed run is not retried: the next one scheduled does its work (every task is idempotent).
        opts: { attempts: 1, removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } },
      },
    );
  const stopping = new AbortController();
  const worker = new Worker(
    MAINTENANCE_QUEUE,
    (job: Job) => {
      if (!(MAINTENANCE_TASKS as readonly string[]).includes(job.name)) throw new Error(`unknown maintenance task ${job.name}`);
      return options.run(job.name as MaintenanceTask, stopping.signal);
    },
    {
      connection,
      prefix,
      concurrency: 1,
      lockDuration: options.lockDurationMs,
      stalledInterval: options.stalledIntervalMs,
    },
  );
  worker.on("error", (err) => options.onError?.(err));
  return {
    queue,
    worker,
    async close() {
      stopping.abort();
      await worker.close();
      await queue.close();
    },
  };
}
