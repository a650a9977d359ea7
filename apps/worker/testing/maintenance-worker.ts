// A worker process serving only the maintenance queue, for test/retention.test.ts: each run logs
// `start <NAME>` and `end <NAME>` to the Redis list LOG_KEY; the first run of the worker named
// "dies" hangs, so the test can kill it mid-run.
import { Redis } from "ioredis";
import { startMaintenance } from "@mixdown/queue";

const { REDIS_URL, PREFIX, NAME, LOG_KEY, EVERY_MS } = process.env as Record<string, string>;
const log = new Redis(REDIS_URL!);
const connection = new Redis(REDIS_URL!, { maxRetriesPerRequest: null });
let runs = 0;
const maintenance = await startMaintenance({
  connection,
  prefix: PREFIX!,
  everyMs: { "retention-sweep": Number(EVERY_MS) },
  async run() {
    runs++;
    await log.rpush(LOG_KEY!, `start ${NAME}`);
    if (NAME === "dies" && runs === 1) await new Promise(() => undefined);
    await new Promise((r) => setTimeout(r, 150));
    await log.rpush(LOG_KEY!, `end ${NAME}`);
  },
  lockDurationMs: 1_000,
  stalledIntervalMs: 500,
});
process.once("SIGTERM", async () => {
  await maintenance.close();
  connection.disconnect();
  log.disconnect();
  process.exit(0);
});
