import { createServer, type Server } from "node:http";
import type { Registry } from "prom-client";
import { bearerMatches } from "./worker-metrics.ts";

export interface HealthSource {
  queues: readonly string[];
  activeJobs(): number;
  shuttingDown(): boolean;
  /** `GET /metrics` (Prometheus), behind `Authorization: Bearer <token>` when a token is set; absent: 404. */
  metrics?: { registry: Registry; token: string | undefined };
}

const json = (status: number, body: object) => ({ status, type: "application/json", body: JSON.stringify(body) });

/** The worker's only HTTP surface: `GET /healthz` for the orchestrator (503 while shutting down) and `GET /metrics`. */
export function startHealthServer(port: number, host: string, source: HealthSource): Promise<Server> {
  const answer = async (method: string | undefined, url: string | undefined, authorization: string | undefined) => {
    const path = (url ?? "").split("?")[0];
    if (method === "GET" && (path === "/healthz" || path === "/readyz")) {
      const down = source.shuttingDown();
      return json(down ? 503 : 200, {
        status: down ? "shutting-down" : "ok",
        queues: source.queues,
        activeJobs: source.activeJobs(),
        pid: process.pid,
      });
    }
    if (method === "GET" && path === "/metrics" && source.metrics) {
      const { registry, token } = source.metrics;
      if (token && !bearerMatches(authorization, token)) {
        return json(401, {
          statusCode: 401,
          error: "Unauthorized",
          message: authorization
            ? "invalid metrics token"
            : "missing Authorization header: send `Authorization: Bearer <METRICS_TOKEN>`",
        });
      }
      return { status: 200, type: registry.contentType, body: await registry.metrics() };
    }
    return json(404, { statusCode: 404, error: "Not Found", message: `Route ${method} ${url} not found` });
  };
  const server = createServer((req, res) => {
    answer(req.method, req.url, req.headers.authorization)
      .catch((err: Error) =>
        json(500, { statusCode: 500, error: "Internal Server Error", message: `metrics could not be collected: ${err.message}` }),
      )
      .then(({ status, type, body }) => {
        const headers: Record<string, string> = { "content-type": type };
        if (status === 401) headers["www-authenticate"] = 'Bearer realm="mixdown-metrics"';
        res.writeHead(status, headers).end(body);
      });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}
