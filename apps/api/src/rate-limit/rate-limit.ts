import type { FastifyInstance } from "fastify";
import { tooManyRequests } from "../http/errors.ts";
import type { RateLimitRepository } from "./rate-limit-repository.ts";

export interface RateLimitOptions {
  repository: RateLimitRepository;
  /** Requests per minute for keys without limits of their own; 0 turns the bucket off. */
  readsPerMinute: number;
  writesPerMinute: number;
  /** Longest a Redis round trip may take before the request is let through unlimited. */
  timeoutMs?: number;
}

const WINDOW_MS = 60_000;

/**
 * Per-key limits in two buckets: reads (GET/HEAD) and writes (everything else). A key's own
 * limit (`keys create` / `keys limits`) wins over the deployment-wide one; 0 means unlimited.
 * Runs after authentication and before the body is read, so a limited upload costs nothing.
 * Answers 429 with `Retry-After`; responses carry `X-RateLimit-*` only while a limit applies
 * (an unlimited request is not counted at all). If Redis cannot answer in time the request goes
 * through (availability over strictness) and a warning is logged.
 */
export function registerRateLimit(scope: FastifyInstance, options: RateLimitOptions): void {
  scope.addHook("onRequest", async (request, reply) => {
    if (!request.auth) return;
    const read = request.method === "GET" || request.method === "HEAD";
    const own = read ? request.auth.rateLimits.readsPerMinute : request.auth.rateLimits.writesPerMinute;
    const limit = own ?? (read ? options.readsPerMinute : options.writesPerMinute);
    if (limit <= 0) return;
    let timer: NodeJS.Timeout | undefined;
    let result;
    try {
      result = await Promise.race([
        options.repository.hit(read ? "read" : "write", String(request.auth.apiKeyId), WINDOW_MS),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error("rate limit check timed out")), options.timeoutMs ?? 1000);
        }),
      ]);
    } catch (error) {
      request.log.warn({ err: error }, "rate limit not checked");
      return;
    } finally {
      clearTimeout(timer);
    }
    const resetSeconds = Math.max(1, Math.ceil(result.resetInMs / 1000));
    reply.header("x-ratelimit-limit", String(limit));
    reply.header("x-ratelimit-remaining", String(Math.max(0, limit - result.count)));
    reply.header("x-ratelimit-reset", String(resetSeconds));
    if (result.count > limit) {
      throw tooManyRequests(
        `rate limit exceeded: ${limit} ${read ? "read" : "write"} requests per minute for this API key; retry in ${resetSeconds} s`,
        resetSeconds,
      );
    }
  });
}
