import { publicBaseUrl } from "@mixdown/config";
import { recordWebhookAttempt } from "@mixdown/db";
import { JobFailure } from "@mixdown/jobs";
import { API_PREFIX, RecordPresenter } from "@mixdown/records";
import { deliverWebhook, WebhookAddressPolicy, WebhookRefused } from "@mixdown/webhooks";
import type { JobHandler } from "../../run-job.ts";
import type { WorkerKind } from "../context.ts";

export interface WebhookDeliveryJobDeps {
  presenter: RecordPresenter;
  policy: WebhookAddressPolicy;
  timeoutMs: number;
  /** Notes a failed try on the WebhookDelivery row (its status or error), before the retry. */
  recordAttempt(deliveryId: number, outcome: { statusCode: number | null; error: string }): Promise<void>;
}

/**
 * Sends a job's end to its webhook URL: the job's public record as it is now (URLs signed at
 * send time, as GET answers them), signed with the creating key's secret. A 2xx delivers; no
 * answer, a 5xx or a 429 is retried with the kind's backoff; any other answer (4xx, a redirect)
 * or a denied address is final, since the receiver or the policy will say the same next time.
 */
export function webhookDeliveryHandler(deps: WebhookDeliveryJobDeps): JobHandler<"webhook-delivery"> {
  return {
    async run({ row: { delivery, secret, job }, signal, log }) {
      if (!job) throw new JobFailure("permanent", `the ${delivery.jobKind} job ${delivery.rowId} no longer exists`);
      if (!secret)
        throw new JobFailure("permanent", "the API key that created the job no longer exists, so nothing can sign the delivery");
      const record = await deps.presenter.present(job.record, job.row as never);
      const failed = async (statusCode: number | null, error: string, kind: "transient" | "permanent") => {
        await deps.recordAttempt(delivery.id, { statusCode, error });
        return new JobFailure(kind, error);
      };
      let statusCode: number;
      try {
        ({ statusCode } = await deliverWebhook({
          url: delivery.url,
          body: JSON.stringify(record),
          secret,
          event: `job.${delivery.event}`,
          deliveryId: delivery.id,
          timeoutMs: deps.timeoutMs,
          policy: deps.policy,
          signal,
        }));
      } catch (err) {
        const message = (err as Error).message;
        throw await failed(null, message, err instanceof WebhookRefused ? "permanent" : "transient");
      }
      log.info({ statusCode, url: delivery.url }, "webhook answered");
      if (statusCode >= 200 && statusCode < 300) return { statusCode };
      if (statusCode >= 500 || statusCode === 429)
        throw await failed(statusCode, `the receiver answered ${statusCode}`, "transient");
      throw await failed(statusCode, `the receiver answered ${statusCode}; not retried`, "permanent");
    },
  };
}

export const webhookDeliveryKind: WorkerKind<"webhook-delivery"> = {
  start: ({ config, storage, voiceAssets, prisma }) =>
    webhookDeliveryHandler({
      // Records as the API presents them, links included: API_PREFIX is the interface's fixed path.
      presenter: new RecordPresenter(storage, {
        ttlSeconds: config.SIGNED_URL_TTL_SECONDS,
        apiBaseUrl: `${publicBaseUrl(config)}${API_PREFIX}`,
        missingAssets: (row) => voiceAssets.missingFor(row),
        outputRetentionMinutes: config.RETENTION_OUTPUT_MINUTES,
      }),
      policy: new WebhookAddressPolicy(config.WEBHOOK_DENIED_NETWORKS),
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      recordAttempt: (id, outcome) => recordWebhookAttempt(prisma, id, outcome),
    }),
};
