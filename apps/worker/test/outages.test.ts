import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, before, beforeEach, test } from "node:test";
import { Worker, type Job } from "bullmq";
import pino from "pino";
import { loadConfig, type Config } from "@mixdown/config";
import {
  ApiKeyRepository,
  createJobTables,
  createPrismaClient,
  RunningJobRepository,
  SeparationJobRepository,
  type PrismaClient,
} from "@mixdown/db";
import { startTestStack, type TestStack } from "@mixdown/devstack";
import { createQueues, Reconciler, type JobQueues } from "@mixdown/queue";
import type { ObjectStorage } from "@mixdown/storage";
import { JobRunner, type AttemptOutcome, type JobEnded, type JobHandler, type RowWritePolicy } from "../src/run-job.ts";
import { createWorkerStorage } from "../src/worker-app.ts";

let stack: TestStack;
let config: Config;
let prisma: PrismaClient;
let queues: JobQueues;
let callerId: number;
let ended: JobEnded[];
/** The worker's warnings, as JSON lines. */
let warnings: Array<{ msg: string; [field: string]: unknown }>;
const logger = pino(
  { level: "warn" },
  new Writable({
    write(line, _encoding, done) {
      warnings.push(JSON.parse(String(line)));
      done();
    },
  }),
);

before(async () => {
  stack = await startTestStack({ storage: "s3" });
  config = loadConfig({ ...stack.env, STORAGE_RETRY_ATTEMPTS: "3", STORAGE_RETRY_DELAY_MS: "50" });
  prisma = createPrismaClient(config.DATABASE_URL);
  queues = createQueues({ connection: config.REDIS_URL, prefix: config.QUEUE_PREFIX, attempts: 2, backoffDelayMs: 50 });
  callerId = (await new ApiKeyRepository(prisma).createApiKey({ name: "outages-test" })).callerId;
});
after(async () => {
  await stack?.postgres.resume();
  await stack?.s3.resume();
  await queues?.close();
  await prisma?.$disconnect();
  await stack?.stop();
});
beforeEach(async () => {
  ended = [];
  warnings = [];
  await queues.queue("separation").obliterate({ force: true });
});

function runner(rowWrites: RowWritePolicy): JobRunner {
  const r = new JobRunner(createJobTables(prisma), { tmpDir: config.TMP_DIR, logger, rowCheckIntervalMs: 200, rowWrites });
  r.onJobEnded((event) => void ended.push(event));
  return r;
}

/** Runs separation deliveries through `jobRunner` in a real BullMQ worker until `settles` says so. */
async function runSeparation(
  jobRunner: JobRunner,
  handler: JobHandler<"separation">,
  settles: (outcome: AttemptOutcome | "failed") => boolean = () => true,
) {
  const row = await new SeparationJobRepository(prisma).create({
    callerId,
    kind: "stem_split",
    inputKey: "uploads/x.wav",
    inputFormat: "wav",
  });
  const outcomes: Array<AttemptOutcome | "failed"> = [];
  const worker = new Worker("separation", (job: Job) => jobRunner.run("separation", job, handler), {
    connection: { url: config.REDIS_URL, maxRetriesPerRequest: null },
    prefix: config.QUEUE_PREFIX,
  });
  const settled = new Promise<void>((resolve) => {
    const seen = (outcome: AttemptOutcome | "failed") => {
      outcomes.push(outcome);
      if (settles(outcome)) resolve();
    };
    worker.on("completed", (_job, outcome: AttemptOutcome) => seen(outcome));
    // A failed attempt that will be retried is `delayed`; one that failed for good stays `failed`.
    worker.on("failed", (job) => void job?.getState().then((state) => state === "failed" && seen("failed")));
  });
  await queues.enqueue({ queue: "separation", payload: { kind: "stem-split", jobId: row.id } });
  return {
    rowId: row.id,
    worker,
    outcomes,
    settled: async () => {
      await settled;
      return prisma.separationJob.findUniqueOrThrow({ where: { id: row.id } });
    },
  };
}

const outputs = (vocalKey = "v") => ({
  vocalKey,
  lossyVocalKey: "lv",
  backingKey: "b",
  stems: [],
  lossyStems: [],
  models: ["vocals"],
});

async function waitFor<T>(what: string, read: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("a job's end written while PostgreSQL is away is tried again with backoff and written once, when it is back", async () => {
  let runs = 0;
  let back: Promise<void> | undefined;
  const job = await runSeparation(runner({ attempts: 20, delayMs: 100 }), {
    async run() {
      runs++;
      await stack.postgres.halt();
      // Back while the runner waits between its tries.
      back = new Promise((r) => setTimeout(r, 1_500)).then(() => stack.postgres.resume());
      return outputs();
    },
  });
  const row = await job.settled();
  await job.worker.close();
  await back;
  assert.equal(runs, 1);
  assert.deepEqual(job.outcomes, ["success"]);
  assert.equal(row.status, "success");
  assert.equal(row.progress, 100);
  assert.equal(row.vocalKey, "v");
  assert.deepEqual(
    ended.map((e) => [e.rowId, e.status]),
    [[job.rowId, "success"]],
  );
  const waits = warnings.filter((w) => w.msg === "the database is unavailable; will publish the outputs again");
  assert.ok(waits.length >= 2, `tried again with backoff (${waits.length} waits logged)`);
  assert.deepEqual(
    waits.slice(0, 3).map((w) => w.delayMs),
    [100, 200, 400],
  );
});

test("an end still unwritten after its tries is settled by the reconciler: the job runs once more and publishes once", async () => {
  let runs = 0;
  const job = await runSeparation(
    runner({ attempts: 2, delayMs: 50 }),
    {
      async run() {
        runs++;
        if (runs === 1) await stack.postgres.halt();
        return outputs(`v${runs}`);
      },
    },
    (outcome) => outcome !== "end-unwritten",
  );
  // The first run's work is done but the database stayed away: its BullMQ entry completes, the row stays running.
  await waitFor(
    "the first run gives up writing its end",
    async () => job.outcomes,
    (o) => o.length === 1,
  );
  assert.deepEqual(job.outcomes, ["end-unwritten"]);
  await stack.postgres.resume();
  assert.equal((await prisma.separationJob.findUniqueOrThrow({ where: { id: job.rowId } })).status, "running");
  assert.equal(ended.length, 0, "no end was announced");

  const reconciler = new Reconciler({ queues, source: new RunningJobRepository(prisma), graceSeconds: 0 });
  const { requeued } = await reconciler.reconcileOnce(new Date(Date.now() + 1_000));
  assert.deepEqual(requeued, [{ queue: "separation", payload: { kind: "stem-split", jobId: job.rowId } }]);
  const row = await job.settled();
  await job.worker.close();
  assert.equal(runs, 2);
  assert.deepEqual(job.outcomes, ["end-unwritten", "success"]);
  assert.equal(row.status, "success");
  assert.equal(row.vocalKey, "v2");
  assert.deepEqual(
    ended.map((e) => [e.rowId, e.status]),
    [[job.rowId, "success"]],
    "announced once",
  );
});

test("an output stored while S3 is away is tried again with backoff, and the job succeeds once S3 is back", async () => {
  const storage: ObjectStorage = createWorkerStorage(
    loadConfig({ ...stack.env, STORAGE_RETRY_ATTEMPTS: "20", STORAGE_RETRY_DELAY_MS: "100" }),
    logger,
  );
  let runs = 0;
  let back: Promise<void> | undefined;
  try {
    const job = await runSeparation(runner({ attempts: 1, delayMs: 1 }), {
      async run(ctx) {
        runs++;
        const file = join(ctx.workDir, "vocals.wav");
        await writeFile(file, "RIFF....WAVE");
        await stack.s3.halt();
        back = new Promise((r) => setTimeout(r, 1_500)).then(() => stack.s3.resume());
        const key = `outputs/stem-split/${ctx.rowId}/vocals.wav`;
        await storage.putFile(key, file);
        return outputs(key);
      },
    });
    const row = await job.settled();
    await job.worker.close();
    await back;
    assert.equal(runs, 1);
    assert.equal(row.status, "success");
    assert.equal((await storage.stat(row.vocalKey!))?.size, 12);
    const waits = warnings.filter((w) => w.msg === "object storage unavailable; trying again");
    assert.ok(waits.length >= 2, `tried again with backoff (${waits.length} waits logged)`);
    assert.deepEqual(
      waits.slice(0, 3).map((w) => [w.operation, w.key, w.delayMs]),
      [100, 200, 400].map((delayMs) => ["store", row.vocalKey, delayMs]),
    );
  } finally {
    await stack.s3.resume();
    await storage.close();
  }
});

test("a job whose outputs cannot be stored ends error naming object storage, only after the storage tries of every attempt", async () => {
  const storage: ObjectStorage = createWorkerStorage(config, logger);
  const statusAtStart: string[] = [];
  await stack.s3.halt();
  try {
    const job = await runSeparation(runner({ attempts: 1, delayMs: 1 }), {
      async run(ctx) {
        statusAtStart.push((await prisma.separationJob.findUniqueOrThrow({ where: { id: ctx.rowId } })).status);
        const file = join(ctx.workDir, "vocals.wav");
        await writeFile(file, "RIFF....WAVE");
        await storage.putFile(`outputs/stem-split/${ctx.rowId}/vocals.wav`, file);
        return outputs();
      },
    });
    const row = await job.settled();
    await job.worker.close();
    assert.deepEqual(statusAtStart, ["running", "running"], "the row was still running when the second attempt began");
    assert.deepEqual(job.outcomes, ["failed"]);
    assert.equal(row.status, "error");
    assert.match(
      row.errorMessage ?? "",
      new RegExp(
        `^Processing failed after 2 attempts: object storage is unavailable: could not store outputs/stem-split/${job.rowId}/vocals\\.wav \\(3 tries\\): `,
      ),
    );
    // STORAGE_RETRY_ATTEMPTS=3: two waits per attempt.
    assert.equal(warnings.filter((w) => w.msg === "object storage unavailable; trying again").length, 4);
    assert.deepEqual(
      ended.map((e) => [e.rowId, e.status]),
      [[job.rowId, "error"]],
    );
  } finally {
    await stack.s3.resume();
    await storage.close();
  }
});
