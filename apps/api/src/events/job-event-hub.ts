import type { JobChange } from "@mixdown/db";
import type { RecordKind } from "@mixdown/jobs";
import { tailJobEvents, type JobEventLog, type JobEventTail, type StoredJobEvent } from "@mixdown/queue";
import type { FastifyBaseLogger } from "fastify";

/** One open event stream, as the hub feeds it. */
export interface JobEventSubscriber {
  /** An event of the subscriber's caller, in stream order. */
  onEvent(stored: StoredJobEvent): void;
  /** The hub's Redis connection was lost and is back: events appended meanwhile may be missing. */
  onResync(): void;
}

/**
 * The API process's one reader of the job events (`@mixdown/queue`'s job-events.ts): a blocking
 * Redis connection, opened with the first stream and kept until the app closes, whose events
 * go to the open streams of their caller. A stream costs the hub one set entry; nothing is
 * queued here (each stream bounds what it holds for its client, `EventStream`).
 */
export class JobEventHub {
  readonly #byCaller = new Map<number, Set<JobEventSubscriber>>();
  /** The API path of each record kind (`vocal_separation` -> `vocal-separations`), as the job routes register them. */
  readonly #paths = new Map<RecordKind, string>();
  #tail: Promise<JobEventTail> | undefined;
  #closed = false;

  constructor(
    readonly log: JobEventLog,
    private readonly options: { redisUrl: string; prefix: string; logger: FastifyBaseLogger },
  ) {}

  /** Appends a change this process wrote (a cancel, the reconciler's end); a failure is logged, never the write's. */
  publish(change: JobChange): Promise<void> {
    return this.log.publish(change).then(
      () => undefined,
      (err: Error) => this.options.logger.warn({ err: err.message, ...change }, "could not append a job event"),
    );
  }

  nameKind(recordKind: RecordKind, path: string): void {
    this.#paths.set(recordKind, path);
  }

  /** The API path a record kind's jobs are under (what the caller-wide stream calls `kind`). */
  pathOf(recordKind: RecordKind): string {
    return this.#paths.get(recordKind) ?? recordKind;
  }

  /** Open streams in this process. */
  get subscriberCount(): number {
    let count = 0;
    for (const set of this.#byCaller.values()) count += set.size;
    return count;
  }

  /** Feeds `subscriber` the events of `callerId` from now on (once the reader runs); returns its removal. */
  async subscribe(callerId: number, subscriber: JobEventSubscriber): Promise<() => void> {
    let set = this.#byCaller.get(callerId);
    if (!set) this.#byCaller.set(callerId, (set = new Set()));
    set.add(subscriber);
    const remove = () => {
      const current = this.#byCaller.get(callerId);
      if (!current) return;
      current.delete(subscriber);
      if (current.size === 0) this.#byCaller.delete(callerId);
    };
    try {
      await this.#start();
    } catch (error) {
      remove();
      throw error;
    }
    return remove;
  }

  #start(): Promise<JobEventTail> {
    if (this.#closed) return Promise.reject(new Error("the app is closing"));
    this.#tail ??= tailJobEvents(this.options.redisUrl, this.options.prefix, {
      onEvents: (events) => this.#dispatch(events),
      onReconnect: () => {
        for (const set of this.#byCaller.values()) for (const subscriber of set) subscriber.onResync();
      },
      onError: (error) => this.options.logger.warn({ err: error.message }, "job events: redis connection error"),
    }).catch((error: unknown) => {
      this.#tail = undefined;
      throw error;
    });
    return this.#tail;
  }

  #dispatch(events: StoredJobEvent[]): void {
    for (const stored of events) {
      const set = this.#byCaller.get(stored.event.callerId);
      if (!set) continue;
      for (const subscriber of [...set]) {
        try {
          subscriber.onEvent(stored);
        } catch (err) {
          this.options.logger.warn({ err: (err as Error).message }, "an event stream failed to take an event");
        }
      }
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const tail = this.#tail;
    this.#tail = undefined;
    if (tail) await (await tail.catch(() => undefined))?.close();
  }
}
