// How a job's status and progress reach the API's event streams (`GET .../:id/events`,
// `GET /events`): whoever writes a job row (a worker, the API's cancel, the reconciler) appends
// the change to one Redis stream per deployment, trimmed to about `maxLength` entries. Every API
// process reads it with one blocking connection and hands each entry to its open streams. An
// entry's stream id is the SSE event's `id:`: a client that reconnects with `Last-Event-ID`
// gets the entries after it again, as long as the stream still holds them.
import { Redis } from "ioredis";
import { RECORD_KINDS, type JobEndStatus, type RecordKind } from "@mixdown/jobs";

export type JobEventStatus = "running" | JobEndStatus;
const STATUSES: readonly string[] = ["running", "success", "error", "cancelled"];

/** One change of one job row, as it is stored in the stream. */
export interface JobEvent {
  recordKind: RecordKind;
  rowId: number;
  callerId: number;
  status: JobEventStatus;
  progress: number;
}

/** An event with its stream id (`<ms>-<seq>`, increasing). */
export interface StoredJobEvent {
  id: string;
  event: JobEvent;
}

/** The stream's key, under the deployment's QUEUE_PREFIX so two deployments sharing a Redis stay apart. */
export const jobEventsKey = (prefix: string) => `${prefix}:job-events`;

/** The event in an entry's field, or undefined for anything else (an entry of an unknown version). */
export function parseJobEvent(text: string): JobEvent | undefined {
  try {
    const value = JSON.parse(text) as Partial<JobEvent>;
    const { recordKind, rowId, callerId, status, progress } = value;
    if (typeof recordKind !== "string" || !(RECORD_KINDS as readonly string[]).includes(recordKind)) return undefined;
    if (!Number.isSafeInteger(rowId) || !Number.isSafeInteger(callerId)) return undefined;
    if (typeof status !== "string" || !STATUSES.includes(status)) return undefined;
    if (typeof progress !== "number") return undefined;
    return {
      recordKind: recordKind as RecordKind,
      rowId: rowId!,
      callerId: callerId!,
      status: status as JobEventStatus,
      progress,
    };
  } catch {
    return undefined;
  }
}

/** Stream ids compare as (ms, seq) pairs; -1, 0 or 1. */
export function compareStreamIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split("-").map(Number);
  const [bm = 0, bs = 0] = b.split("-").map(Number);
  return am !== bm ? Math.sign(am - bm) : Math.sign(as - bs);
}

/** A stream id as a client may send it back (`Last-Event-ID`), else undefined. */
export function asStreamId(text: string | undefined): string | undefined {
  return text && /^\d{1,15}-\d{1,15}$/.test(text) ? text : undefined;
}

type Entries = Array<[id: string, fields: string[]]>;

function eventsOf(entries: Entries): StoredJobEvent[] {
  const events: StoredJobEvent[] = [];
  for (const [id, fields] of entries) {
    const event = fields[0] === "e" && fields[1] !== undefined ? parseJobEvent(fields[1]) : undefined;
    if (event) events.push({ id, event });
  }
  return events;
}

/** Appends and reads job events over a shared, non-blocking connection (the queues'). */
export class JobEventLog {
  readonly key: string;

  constructor(
    private readonly connection: Redis,
    prefix: string,
    /** About how many entries the stream keeps (JOB_EVENTS_RETAINED): how far back a resume reaches. */
    private readonly maxLength: number,
  ) {
    this.key = jobEventsKey(prefix);
  }

  /** Appends one event; its stream id. */
  async publish(event: JobEvent): Promise<string> {
    const id = await this.connection.xadd(this.key, "MAXLEN", "~", String(this.maxLength), "*", "e", JSON.stringify(event));
    return id!;
  }

  /** Up to `count` events after `afterId` (exclusive), oldest first. */
  async after(afterId: string, count: number): Promise<StoredJobEvent[]> {
    return eventsOf((await this.connection.xrange(this.key, `(${afterId}`, "+", "COUNT", count)) as Entries);
  }

  /** The id of the oldest entry the stream still holds (undefined: empty). */
  async oldestId(): Promise<string | undefined> {
    const [first] = (await this.connection.xrange(this.key, "-", "+", "COUNT", 1)) as Entries;
    return first?.[0];
  }

  /** The id of the newest entry ("0-0": none yet): everything up to it has happened. */
  async newestId(): Promise<string> {
    const [last] = (await this.connection.xrevrange(this.key, "+", "-", "COUNT", 1)) as Entries;
    return last?.[0] ?? "0-0";
  }
}

export interface JobEventTail {
  close(): Promise<void>;
}

/**
 * Reads every event appended after `fromId` ("$": from now on) with a blocking connection of its
 * own, batch by batch, and hands each batch to `onEvents` (awaited before the next read). After
 * a lost connection it goes on from the last id it read, so nothing the stream still holds is
 * missed; `onReconnect` is told once it is back (events whose append failed while Redis was away
 * are lost, and a restarted Redis may have lost the stream).
 */
export async function tailJobEvents(
  redisUrl: string,
  prefix: string,
  handlers: {
    onEvents(events: StoredJobEvent[]): void | Promise<void>;
    onReconnect?(): void;
    onError(error: Error): void;
  },
  options: { blockMs?: number; batch?: number } = {},
): Promise<JobEventTail> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null, lazyConnect: true });
  connection.on("error", handlers.onError);
  try {
    await connection.connect();
  } catch (error) {
    // ioredis would go on reconnecting a connection whose first connect failed: nobody holds it.
    connection.disconnect();
    throw error;
  }
  let closed = false;
  // A lost connection: ioredis sends the pending read again once it is back, so the reader goes
  // on where it was; what could not be appended meanwhile is what `onReconnect` makes up for.
  let lost = false;
  connection.on("close", () => (lost = true));
  connection.on("ready", () => {
    if (!lost || closed) return;
    lost = false;
    handlers.onReconnect?.();
  });
  const key = jobEventsKey(prefix);
  const [last] = (await connection.xrevrange(key, "+", "-", "COUNT", 1)) as Entries;
  let lastId = last?.[0] ?? "0-0";
  const loop = (async () => {
    while (!closed) {
      try {
        const answer = (await connection.xread(
          "COUNT",
          options.batch ?? 500,
          "BLOCK",
          options.blockMs ?? 5_000,
          "STREAMS",
          key,
          lastId,
        )) as Array<[string, Entries]> | null;
        const entries = answer?.[0]?.[1] ?? [];
        if (entries.length === 0) continue;
        lastId = entries[entries.length - 1]![0];
        const events = eventsOf(entries);
        if (events.length > 0) await handlers.onEvents(events);
      } catch (error) {
        if (closed) break;
        handlers.onError(error as Error);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  })();
  return {
    async close() {
      closed = true;
      connection.disconnect();
      await loop;
    },
  };
}
