import { Queue, type JobsOptions } from "bullmq";
import { Redis } from "ioredis";
import { bullJobId, bullJobName, QueueName, rowIdOf, type JobRef, type PayloadByQueue } from "./jobs.ts";

export interface QueueOptions {
  /** A Redis URL (a connection is opened and owned) or an ioredis client (shared, not closed). */
  connection: string | Redis;
  /** BullMQ key prefix (QUEUE_PREFIX). */
  prefix: string;
  /** Tries per job before it fails for good (JOB_ATTEMPTS). */
  attempts: number;
  /** First retry delay; doubled on each further retry. */
  backoffDelayMs?: number;
  /**
   * Connection errors (Redis down, reconnecting). Reported at most once per 10 s; without a
   * handler they are ignored here (readiness checks report an unreachable Redis).
   */
  onError?: (error: Error) => void;
}

/** Retry and retention policy of every Mixdown job. */
export function defaultJobOptions(attempts: number, backoffDelayMs = 5_000): JobsOptions {
  return {
    attempts,
    backoff: { type: "exponential", delay: backoffDelayMs },
    // Finished entries are kept a while for inspection; the rows in Postgres are the record.
    removeOnComplete: { age: 24 * 3600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
  };
}

/** Mixdown's queues over one Redis connection. */
export class JobQueues {
  readonly separation: Queue;
  readonly voiceConversion: Queue;
  readonly voiceBlend: Queue;
  readonly voiceModelMedia: Queue;
  readonly connection: Redis;
  readonly prefix: string;
  private readonly ownsConnection: boolean;

  constructor(options: QueueOptions) {
    this.ownsConnection = typeof options.connection === "string";
    this.connection =
      typeof options.connection === "string"
        ? new Redis(options.connection, { maxRetriesPerRequest: 3, connectTimeout: 5_000, lazyConnect: false })
        : options.connection;
    this.prefix = options.prefix;
    const opts = {
      connection: this.connection,
      prefix: options.prefix,
      defaultJobOptions: defaultJobOptions(options.attempts, options.backoffDelayMs),
    };
    this.separation = new Queue(QueueName.separation, opts);
    this.voiceConversion = new Queue(QueueName.voiceConversion, opts);
    this.voiceBlend = new Queue(QueueName.voiceBlend, opts);
    this.voiceModelMedia = new Queue(QueueName.voiceModelMedia, opts);
    let lastReport = 0;
    const report = (error: Error) => {
      if (!options.onError || Date.now() - lastReport < 10_000) return;
      lastReport = Date.now();
      options.onError(error);
    };
    // An 'error' event without a listener would crash the process.
    if (this.ownsConnection) this.connection.on("error", report);
    for (const queue of this.all()) queue.on("error", report);
  }

  queue(name: keyof PayloadByQueue): Queue {
    switch (name) {
      case "separation":
        return this.separation;
      case "voice-conversion":
        return this.voiceConversion;
      case "voice-blend":
        return this.voiceBlend;
      case "voice-model-media":
        return this.voiceModelMedia;
    }
  }

  private all(): Queue[] {
    return [this.separation, this.voiceConversion, this.voiceBlend, this.voiceModelMedia];
  }

  /**
   * Adds a row's queue entry. The BullMQ id comes from the row id, so a second add of the same
   * row while its entry exists is a no-op.
   */
  async enqueue(ref: JobRef): Promise<string> {
    const id = bullJobId(ref.queue, rowIdOf(ref));
    await this.queue(ref.queue).add(bullJobName(ref), ref.payload, { jobId: id });
    return id;
  }

  enqueueSeparation(payload: PayloadByQueue["separation"]): Promise<string> {
    return this.enqueue({ queue: "separation", payload });
  }

  enqueueVoiceConversion(payload: PayloadByQueue["voice-conversion"]): Promise<string> {
    return this.enqueue({ queue: "voice-conversion", payload });
  }

  enqueueVoiceBlend(payload: PayloadByQueue["voice-blend"]): Promise<string> {
    return this.enqueue({ queue: "voice-blend", payload });
  }

  enqueueVoiceModelMedia(payload: PayloadByQueue["voice-model-media"]): Promise<string> {
    return this.enqueue({ queue: "voice-model-media", payload });
  }

  /** Resolves when Redis answers (readiness checks). */
  async ping(): Promise<void> {
    const answer = await this.connection.ping();
    if (answer !== "PONG") throw new Error(`unexpected PING answer: ${answer}`);
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((q) => q.close()));
    if (this.ownsConnection) await this.connection.quit().catch(() => this.connection.disconnect());
  }
}

export function createQueues(options: QueueOptions): JobQueues {
  return new JobQueues(options);
}
