import { isDatabaseUnavailable, type IdempotencyKeyRepository, type IdempotentResource } from "@mixdown/db";
import type { FastifyBaseLogger, FastifyRequest } from "fastify";
import pRetry from "p-retry";
import { badRequest, conflict } from "../http/errors.ts";

/** How long a key stays bound to its first request (Stripe's window). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600_000;
/**
 * A claim whose create never finished (the process died mid-request) frees its key after this
 * long; a live create (store the upload, write the row, queue it) takes seconds.
 */
export const ABANDONED_CLAIM_MS = 10 * 60_000;
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** The request's `Idempotency-Key`, checked before any of the body is read; undefined when absent. */
export function readIdempotencyKey(request: FastifyRequest): string | undefined {
  const raw = request.headers["idempotency-key"];
  if (raw === undefined) return undefined;
  const key = Array.isArray(raw) ? raw.join(", ") : raw;
  if (key.trim() === "") throw badRequest("Idempotency-Key must not be empty: send a unique value per request, e.g. a UUID");
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw badRequest(`Idempotency-Key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters (got ${key.length})`);
  }
  return key;
}

export interface IdempotentCreate<R extends { id: number }> {
  callerId: number;
  key: string | undefined;
  /** The route pattern, named in the 409 when the key is reused elsewhere. */
  route: string;
  fingerprint: string;
  kind: IdempotentResource["kind"];
  create(): Promise<R>;
  /** Reads the record a first request created, as it is now. */
  current(id: number): Promise<R>;
}

/**
 * `Idempotency-Key` on creates: within 24 hours the same key from the same caller with the same
 * request returns the record the first request created (its current state) and creates nothing;
 * with another request, or while the first is still running, it answers 409. A create that fails
 * releases its key, so the caller can correct the request and send it again under the same key.
 */
export class IdempotentCreates {
  constructor(
    private readonly keys: IdempotencyKeyRepository,
    private readonly log: FastifyBaseLogger,
  ) {}

  async run<R extends { id: number }>(op: IdempotentCreate<R>): Promise<{ record: R; replayed: boolean }> {
    if (op.key === undefined) return { record: await op.create(), replayed: false };
    const now = Date.now();
    const claim = await this.keys.claim(
      { callerId: op.callerId, key: op.key, fingerprint: op.fingerprint, route: op.route },
      { since: new Date(now - IDEMPOTENCY_WINDOW_MS), abandonedBefore: new Date(now - ABANDONED_CLAIM_MS) },
    );
    if (claim.outcome === "exists") {
      const first = claim.existing;
      if (first.fingerprint !== op.fingerprint) {
        throw conflict(
          `Idempotency-Key ${JSON.stringify(op.key)} was already used with a different request (POST ${first.route}); send a new key for a new request`,
        );
      }
      if (first.resourceId === null) {
        throw conflict(
          `a request with Idempotency-Key ${JSON.stringify(op.key)} is still being processed; retry when it has finished`,
          {
            "retry-after": "1",
          },
        );
      }
      return { record: await op.current(first.resourceId), replayed: true };
    }
    let record: R;
    try {
      record = await op.create();
    } catch (error) {
      await this.release(claim.claimId);
      throw error;
    }
    // The record exists whatever happens next: a failure here leaves the key claimed (a retry gets
    // 409 until ABANDONED_CLAIM_MS), never a second record.
    await this.keys
      .complete(claim.claimId, { kind: op.kind, id: record.id })
      .catch((e: unknown) => this.log.error({ err: e, key: op.key }, "could not bind the idempotency key to its record"));
    return { record, replayed: false };
  }

  /**
   * Frees the key of a create that failed. When the database is away (the likely reason the
   * create failed) it is tried again in the background, with backoff, for about a minute: else
   * the client's retry under the same key would get 409 until ABANDONED_CLAIM_MS.
   */
  private async release(claimId: number): Promise<void> {
    const attempt = () => this.keys.release(claimId);
    try {
      await attempt();
    } catch (error) {
      if (!isDatabaseUnavailable(error)) {
        this.log.error({ err: error }, "could not release an idempotency key");
        return;
      }
      // Waits of 1, 2, ... 32 s: about a minute in all, without keeping the process alive.
      void pRetry(attempt, { retries: 6, factor: 2, minTimeout: 1_000, unref: true }).catch(() =>
        this.log.error({ claimId }, "could not release an idempotency key: the database stayed away"),
      );
    }
  }
}
