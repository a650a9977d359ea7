import type { Prisma, QuotaRefusal, UsageRepository } from "@mixdown/db";
import { ApiError } from "../http/errors.ts";

const minutes = (seconds: number) => (seconds / 60).toFixed(1);

/**
 * The 429 of a create over its key's monthly quota: the message and the body's `quota` name the
 * quota, what is used and running, what the job would take and when the month resets;
 * `Retry-After` is the seconds until then.
 */
export function quotaExceeded(refusal: QuotaRefusal, now = new Date()): ApiError {
  const resetsAt = refusal.resetsAt.toISOString();
  const retryAfter = Math.max(1, Math.ceil((refusal.resetsAt.getTime() - now.getTime()) / 1000));
  return new ApiError(
    429,
    `this job's ${minutes(refusal.requestedSeconds)} minutes of audio would go over this API key's monthly quota of ${refusal.minutes} minutes (used ${minutes(refusal.usedSeconds)}, running ${minutes(refusal.runningSeconds)}, ${minutes(refusal.remainingSeconds)} left); it resets at ${resetsAt}`,
    { "retry-after": String(retryAfter) },
    {
      quota: {
        apiKeyId: refusal.apiKeyId,
        minutes: refusal.minutes,
        usedSeconds: refusal.usedSeconds,
        runningSeconds: refusal.runningSeconds,
        requestedSeconds: refusal.requestedSeconds,
        remainingSeconds: refusal.remainingSeconds,
        resetsAt,
      },
    },
  );
}

/**
 * A key's monthly quota as creates meet it: `check` before anything is stored (once the job's
 * seconds are known), `admit` around the row's write (which decides, under the key's lock).
 */
export class UsageQuota {
  constructor(private readonly usage: UsageRepository) {}

  /** Throws the 429 when a job of `seconds` does not fit in the key's quota now. */
  async check(apiKeyId: number, seconds: number): Promise<void> {
    const refused = await this.usage.check(apiKeyId, seconds);
    if (refused) throw quotaExceeded(refused);
  }

  /** Writes the row with `create` when the job still fits, else throws the 429 having written nothing. */
  async admit<T>(apiKeyId: number, seconds: number, create: (db: Prisma.TransactionClient) => Promise<T>): Promise<T> {
    const admitted = await this.usage.admit(apiKeyId, seconds, create);
    if ("refused" in admitted) throw quotaExceeded(admitted.refused);
    return admitted.created;
  }
}
