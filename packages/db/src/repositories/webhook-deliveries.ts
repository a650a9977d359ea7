import { JOB_CATALOGUE, type JobTableKind } from "@mixdown/jobs";
import type { PrismaClient, WebhookDelivery } from "../generated/prisma/client.ts";
import type { JobTable, JobTableOptions } from "./job-table.ts";
import { JOB_TABLE_ROWS, type WebhookRowOf } from "./kinds/index.ts";

/** The ended job a delivery reports, as the record type its catalogue entry names. */
export type WebhookJobRow = {
  [K in JobTableKind]: { record: (typeof JOB_CATALOGUE)[K]["record"]; row: WebhookRowOf<K> };
}[JobTableKind];

/** A delivery still owed, with what signing and presenting it need. */
export interface WebhookDeliveryToSend {
  delivery: WebhookDelivery;
  /** The creating key's secret; null when that key was deleted (the delivery then cannot be signed). */
  secret: string | null;
  /** Null when the job row was deleted meanwhile (its caller was removed). */
  job: WebhookJobRow | null;
}

/** A 2xx answer of the receiver. */
export interface WebhookDelivered {
  statusCode: number;
}

const OWED = { deliveredAt: null, failedAt: null } as const;

/**
 * The outbox as a job table (`webhook-delivery`): a WebhookDelivery neither delivered nor given
 * up is the running row, so the reconciler queues one whose entry is missing (a crash between
 * the job's end and the enqueue) exactly as it does for jobs. `fail` gives up for good.
 */
export function webhookDeliveryTable(prisma: PrismaClient): JobTable<WebhookDeliveryToSend, WebhookDelivered> {
  const giveUp = async (id: number, lastError: string) =>
    (await prisma.webhookDelivery.updateMany({ where: { id, ...OWED }, data: { failedAt: new Date(), lastError } })).count === 1;
  return {
    async findRunnable(id) {
      const delivery = await prisma.webhookDelivery.findFirst({
        where: { id, ...OWED },
        include: { apiKey: { select: { webhookSecret: true } } },
      });
      if (!delivery) return null;
      const { apiKey, ...row } = delivery;
      return { delivery: row, secret: apiKey?.webhookSecret ?? null, job: await findJobRow(prisma, row.jobKind, row.rowId) };
    },
    callerOf: (d) => d.job?.row.callerId ?? null,
    async markStarted(id) {
      await prisma.webhookDelivery.updateMany({ where: { id, ...OWED }, data: { attempts: { increment: 1 } } });
    },
    setProgress: async () => {},
    complete: async (id, { statusCode }) =>
      (
        await prisma.webhookDelivery.updateMany({
          where: { id, ...OWED },
          data: { deliveredAt: new Date(), lastStatusCode: statusCode, lastError: null },
        })
      ).count === 1,
    fail: giveUp,
    cancel: (id) => giveUp(id, "cancelled"),
    async findRunning(createdBefore, afterId, take) {
      const rows = await prisma.webhookDelivery.findMany({
        where: { ...OWED, createdAt: { lt: createdBefore }, id: { gt: afterId } },
        orderBy: { id: "asc" },
        take,
        select: { id: true, enqueuedAt: true, createdAt: true },
      });
      return rows.map((r) => ({
        ref: { queue: "webhook-delivery", payload: { deliveryId: r.id } },
        enqueuedAt: r.enqueuedAt,
        createdAt: r.createdAt,
      }));
    },
    isRunning: async (id) => (await prisma.webhookDelivery.count({ where: { id, ...OWED } })) > 0,
    async markEnqueued(id) {
      await prisma.webhookDelivery.updateMany({ where: { id }, data: { enqueuedAt: new Date() } });
    },
  };
}

/** Notes a failed try (the answer's status, or the network error) on the delivery, for whoever inspects it. */
export async function recordWebhookAttempt(
  prisma: PrismaClient,
  id: number,
  outcome: { statusCode: number | null; error: string },
): Promise<void> {
  await prisma.webhookDelivery.updateMany({
    where: { id, ...OWED },
    data: { lastStatusCode: outcome.statusCode, lastError: outcome.error.slice(0, 1000) },
  });
}

async function findJobRow(prisma: PrismaClient, kind: string, id: number): Promise<WebhookJobRow | null> {
  if (!Object.hasOwn(JOB_TABLE_ROWS, kind)) throw new Error(`webhook delivery names job kind "${kind}", which has no job rows`);
  const tableKind = kind as JobTableKind;
  const row = await JOB_TABLE_ROWS[tableKind].webhookRow(prisma, id);
  return row && ({ record: JOB_CATALOGUE[tableKind].record, row } as WebhookJobRow);
}

/**
 * The job tables' options for a process that holds the queues (API, worker): an owed webhook is
 * queued right after the commit that owes it and marked queued, instead of waiting for the
 * reconciler's next pass.
 */
export function queueOwedWebhooks(
  prisma: PrismaClient,
  enqueue: (ref: { queue: "webhook-delivery"; payload: { deliveryId: number } }) => Promise<unknown>,
): JobTableOptions {
  const deliveries = webhookDeliveryTable(prisma);
  return {
    onWebhookOwed: async (deliveryId) => {
      await enqueue({ queue: "webhook-delivery", payload: { deliveryId } });
      await deliveries.markEnqueued(deliveryId);
    },
  };
}
