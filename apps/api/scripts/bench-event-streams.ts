/**
 * What an open event stream costs the API: the API (this process, on a throwaway PostgreSQL,
 * Redis and local storage) serves `--streams` open `GET /api/kits/v1/events` streams, held by a
 * child process, and the API's memory is read with none open, with all open, and once they are
 * gone (after a full GC each time). Then one job change is written and the time until every
 * stream has it is measured.
 *
 *   ./mixdown.sh bench:event-streams [--streams 500]
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { loadConfig } from "@mixdown/config";
import { ApiKeyRepository, createJobTables, SeparationJobRepository } from "@mixdown/db";
import { startTestStack } from "@mixdown/devstack";
import { buildApp } from "../src/index.ts";

const { values } = parseArgs({ options: { streams: { type: "string", default: "500" } } });
const streams = Number(values.streams);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc (./mixdown.sh bench:event-streams does)");

/** The clients: `count` streams over plain sockets; a line per milestone on stdout. */
const CLIENTS = `
import http from "node:http";
const [url, key, count] = process.argv.slice(1);
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
let ready = 0, changed = 0;
for (let i = 0; i < Number(count); i++) {
  http.get(url, { agent, headers: { authorization: "Bearer " + key } }, (res) => {
    let seen = "";
    res.setEncoding("utf8");
    res.on("data", (text) => {
      seen += text;
      if (seen.includes("event: ready") && !seen.includes("#ready")) { seen += "#ready"; if (++ready === Number(count)) console.log("ready"); }
      if (seen.includes("event: status") && !seen.includes("#status")) { seen += "#status"; if (++changed === Number(count)) console.log("changed"); }
    });
  });
}
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
`;

function memory() {
  gc!();
  gc!();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed, external: m.external + m.arrayBuffers };
}

const stack = await startTestStack({ storage: "local" });
const app = await buildApp(loadConfig({ ...stack.env, LOG_LEVEL: "silent", RATE_LIMIT_READS_PER_MINUTE: "0" }));
try {
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/api/kits/v1/events`;
  const { key, callerId } = await new ApiKeyRepository(app.ctx.prisma).createApiKey({ name: "bench" });
  const job = await new SeparationJobRepository(app.ctx.prisma).create({
    callerId,
    kind: "vocal_separation",
    inputKey: "in/bench",
    inputFormat: "wav",
  });
  const tables = createJobTables(app.ctx.prisma, app.ctx.jobTableOptions);

  const open = async (count: number) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", CLIENTS, url, key, String(count)], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    const lines = createInterface({ input: child.stdout! });
    const next = async () => {
      const [line] = (await once(lines, "line")) as [string];
      return line;
    };
    return { child, next };
  };
  const close = async (child: ReturnType<typeof spawn>) => {
    child.stdin!.end();
    await once(child, "exit");
    const deadline = Date.now() + 10_000;
    while (app.ctx.jobEvents.subscriberCount > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  };

  // Warm: the hub's reader, the route's code and the sockets' first allocations.
  const warm = await open(20);
  await warm.next();
  await close(warm.child);

  const kb = (bytes: number) => (bytes / 1024).toFixed(1);
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  const rows: string[][] = [];
  const before = memory();
  // Twice: what the first round leaves behind, the second must not add to (nothing kept per stream).
  for (let round = 1; round <= 2; round++) {
    const start = memory();
    const clients = await open(streams);
    const t0 = performance.now();
    if ((await clients.next()) !== "ready") throw new Error("the streams did not open");
    const openMs = performance.now() - t0;
    const during = memory();
    const t1 = performance.now();
    await tables.separation.setProgress(job.id, 10 * round);
    if ((await clients.next()) !== "changed") throw new Error("the change did not arrive");
    const fanOutMs = performance.now() - t1;
    const subscribers = app.ctx.jobEvents.subscriberCount;
    await close(clients.child);
    const gone = memory();
    rows.push([
      String(round),
      String(subscribers),
      `${Math.round(openMs)} ms`,
      `${Math.round(fanOutMs)} ms`,
      `${kb((during.heap + during.external - start.heap - start.external) / streams)} KB`,
      `${kb((during.rss - start.rss) / streams)} KB`,
      `${mb(start.heap)} / ${mb(during.heap)} / ${mb(gone.heap)} MB`,
      String(app.ctx.jobEvents.subscriberCount),
    ]);
  }
  console.log(`\nOpen event streams (GET /events), ${streams} at once, twice; node ${process.version}\n`);
  console.log(
    "| round | streams open | time to open all | one change reaching all | API heap + buffers per stream | API RSS per stream | API heap before / open / after | subscribers left |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const row of rows) console.log(`| ${row.join(" | ")} |`);
  console.log(`\nAPI heap with no stream open: ${mb(before.heap)} MB before, ${mb(memory().heap)} MB after both rounds`);
} finally {
  await app.close();
  await stack.stop();
}
