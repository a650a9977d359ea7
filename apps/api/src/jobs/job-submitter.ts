import type { EnqueueOptions, JobQueues, JobRef } from "@mixdown/queue";
import type { FastifyBaseLogger } from "fastify";

/**
 * The last step of every create: add the row's queue entry, then record `enqueuedAt`.
 * The row is already committed, so it is the job's durable record: when Redis is down or slow
 * the request still succeeds and the reconciler adds the entry later (the BullMQ id is
 * derived from the row id, so a late or double add is harmless).
 */
export class JobSubmitter {
  constructor(
    private readonly queues: JobQueues,
    private readonly log: FastifyBaseLogger,
    private readonly timeoutMs = 5_000,
  ) {}

  /** `options.priority`: a batch job's rank among its caller's (`JobQueues.enqueue`). */
  async submit(ref: JobRef, markEnqueued: () => Promise<void>, options: EnqueueOptions = {}): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.queues.enqueue(ref, options),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`queue add timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
        }),
      ]);
    } catch (error) {
      this.log.warn({ err: error, job: ref }, "queue entry not added; the reconciler will add it");
      return false;
    } finally {
      clearTimeout(timer);
    }
    await markEnqueued().catch((error: unknown) => this.log.warn({ err: error, job: ref }, "enqueuedAt not recorded"));
    return true;
  }
}
