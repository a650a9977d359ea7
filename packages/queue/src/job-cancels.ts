// How a cancel reaches the worker running the job: the API ends the row (`cancelled`) first, then
// publishes `{ kind, rowId }` on one Redis pub/sub channel that every worker subscribes to; the
// worker running that row aborts it. Pub/sub is fire-and-forget, so a worker that misses a
// message still stops the job: its runner re-checks every running row every few seconds.
import { Redis } from "ioredis";
import { JOB_KINDS, type JobKind } from "./jobs.ts";

export interface CancelNotice {
  kind: JobKind;
  rowId: number;
}

/** The channel, under the deployment's QUEUE_PREFIX so two deployments sharing a Redis stay apart. */
export const cancelChannel = (prefix: string) => `${prefix}:job-cancels`;

/** The notice in a message, or undefined for anything else (a message from an unknown version). */
export function parseCancelNotice(message: string): CancelNotice | undefined {
  try {
    const { kind, rowId } = JSON.parse(message) as Partial<CancelNotice>;
    if (typeof kind !== "string" || !(JOB_KINDS as readonly string[]).includes(kind)) return undefined;
    if (!Number.isSafeInteger(rowId) || (rowId as number) < 1) return undefined;
    return { kind: kind as JobKind, rowId: rowId as number };
  } catch {
    return undefined;
  }
}

export interface CancelSubscription {
  close(): Promise<void>;
}

/**
 * Calls `onCancel` for every cancel published under `prefix`, over a connection of its own (a
 * subscribed connection can do nothing else). ioredis re-subscribes after a reconnect.
 */
export async function subscribeToCancels(
  redisUrl: string,
  prefix: string,
  onCancel: (notice: CancelNotice) => void,
  onError: (error: Error) => void,
): Promise<CancelSubscription> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  connection.on("error", onError);
  const channel = cancelChannel(prefix);
  connection.on("message", (from: string, message: string) => {
    if (from !== channel) return;
    const notice = parseCancelNotice(message);
    if (notice) onCancel(notice);
  });
  await connection.subscribe(channel);
  return {
    async close() {
      await connection.quit().catch(() => connection.disconnect());
    },
  };
}
