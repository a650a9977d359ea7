import { createServer, type Server } from "node:http";

export interface HealthSource {
  queues: readonly string[];
  activeJobs(): number;
  shuttingDown(): boolean;
}

/** The worker's only HTTP surface: `GET /healthz` for the orchestrator (503 while shutting down). */
export function startHealthServer(port: number, host: string, source: HealthSource): Promise<Server> {
  const server = createServer((req, res) => {
    const ok = req.method === "GET" && (req.url === "/healthz" || req.url === "/readyz");
    const down = source.shuttingDown();
    const status = !ok ? 404 : down ? 503 : 200;
    const body = ok
      ? { status: down ? "shutting-down" : "ok", queues: source.queues, activeJobs: source.activeJobs(), pid: process.pid }
      : { statusCode: 404, error: "Not Found", message: `Route ${req.method} ${req.url} not found` };
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}
