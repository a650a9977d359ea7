import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { AppContext } from "../app-context.ts";
import { errorBody, OUTAGE_RETRY_AFTER_SECONDS } from "../http/errors.ts";
import { errorWithRetryAfter } from "../http/schemas.ts";
import { ReadinessService } from "./readiness-service.ts";

const Check = Type.Union([Type.Literal("ok"), Type.String()]);
const Checks = Type.Object({ postgres: Check, redis: Check, storage: Check });

/** `/healthz` (the process answers) and `/readyz` (Postgres, Redis and storage answer). No auth. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const readiness = new ReadinessService(ctx);
  app.get(
    "/healthz",
    {
      schema: {
        tags: ["Health"],
        operationId: "getHealth",
        summary: "Liveness: the process is up",
        description: "200 while the API process runs and answers; it checks nothing else (see /readyz). No authentication.",
        security: [],
        response: { 200: Type.Object({ status: Type.Literal("ok") }) },
      },
    },
    async () => ({ status: "ok" as const }),
  );
  app.get(
    "/readyz",
    {
      schema: {
        tags: ["Health"],
        operationId: "getReadiness",
        summary: "Readiness: Postgres, Redis and object storage are reachable",
        description:
          "200 when PostgreSQL, Redis and object storage each answered a probe, 503 naming the ones that did not, with `Retry-After` (a load balancer should send no traffic then). No authentication.",
        security: [],
        response: {
          200: Type.Object({ status: Type.Literal("ok"), checks: Checks }),
          503: errorWithRetryAfter(
            "Not ready: the body's `checks` names what did not answer. `Retry-After` says when to ask again.",
            {},
            Type.Object({ statusCode: Type.Integer(), error: Type.String(), message: Type.String(), checks: Checks }),
          ),
        },
      },
    },
    async (_request, reply) => {
      const checks = await readiness.check();
      const down = Object.entries(checks).filter(([, v]) => v !== "ok");
      if (down.length === 0) return reply.send({ status: "ok" as const, checks });
      const message = `not ready: ${down.map(([name, why]) => `${name} (${why})`).join(", ")}`;
      return reply
        .code(503)
        .header("retry-after", String(OUTAGE_RETRY_AFTER_SECONDS))
        .send({ ...errorBody(503, message), checks });
    },
  );
};
