// A webhook receiver for the end-to-end tests: what a customer runs to take Mixdown's deliveries.
import { createHmac } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** An HTTP receiver on 127.0.0.1, as a customer would run one: records every POST; `answers[path]` are the statuses to give, in turn (then 200). */
export async function startReceiver() {
  const received: Received[] = [];
  const answers = new Map<string, number[]>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(answers.get(path)?.shift() ?? 200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    received,
    answers,
    at: (path: string) => received.filter((r) => r.path === path),
    async waitFor(path: string, count: number, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.filter((r) => r.path === path).length < count) {
        if (Date.now() > deadline)
          throw new Error(
            `${path}: ${received.filter((r) => r.path === path).length} of ${count} deliveries after ${timeoutMs} ms`,
          );
        await new Promise((r) => setTimeout(r, 100));
      }
      return received.filter((r) => r.path === path);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** What a receiver does with Stripe's scheme, written here from the spec rather than taken from the code under test. */
export function signatureValid(secret: string, header: string | undefined, body: string): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? "");
  if (!match) return false;
  const expected = createHmac("sha256", secret).update(`${match[1]}.${body}`).digest("hex");
  return expected === match[2] && Math.abs(Date.now() / 1000 - Number(match[1])) < 300;
}
