import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { unauthorized } from "../http/errors.ts";
import { errorResponses } from "../http/schemas.ts";
import type { ApiMetrics } from "./api-metrics.ts";

const digest = (text: string) => createHash("sha256").update(text).digest();

/** Compares digests, so neither the token's length nor its prefix shows in the timing. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^bearer\s+(.+)$/i.exec(header?.trim() ?? "");
  return match !== null && timingSafeEqual(digest(match[1]!), digest(token));
}

/**
 * `GET /metrics`, outside `/api/kits/v1` like the health routes: Prometheus' text format. Behind
 * `Authorization: Bearer <METRICS_TOKEN>` when the token is set; not registered at all (404)
 * when METRICS_ENABLED is false.
 */
export const metricsRoutes: FastifyPluginAsyncTypebox<{ metrics: ApiMetrics; token: string | undefined }> = async (
  app,
  { metrics, token },
) => {
  app.get(
    "/metrics",
    {
      schema: {
        tags: ["Metrics"],
        operationId: "getMetrics",
        summary: "Prometheus metrics of the service (text exposition format)",
        description:
          "HTTP request durations by route, upload bytes, jobs created by kind, queue depth by queue and state, jobs by kind and status, and the process's own metrics. " +
          "The worker serves its metrics (jobs ended, job durations, busy/idle) on its health port. " +
          (token
            ? "Needs `Authorization: Bearer <METRICS_TOKEN>`."
            : "Set METRICS_TOKEN to require `Authorization: Bearer <METRICS_TOKEN>`."),
        security: token ? [{ metricsToken: [] as string[] }] : [],
        response: {
          200: {
            description: "The metrics, in Prometheus' text exposition format",
            content: { "text/plain": { schema: Type.String() } },
          },
          ...errorResponses(401),
        },
      },
      onRequest: async (request) => {
        if (token && !bearerMatches(request.headers.authorization, token)) {
          throw unauthorized(
            request.headers.authorization
              ? "invalid metrics token"
              : "missing Authorization header: send `Authorization: Bearer <METRICS_TOKEN>`",
          );
        }
      },
    },
    async (_request, reply) => {
      const body = await metrics.registry.metrics();
      return reply.type(metrics.registry.contentType).send(body);
    },
  );
};
