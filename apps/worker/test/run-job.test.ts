import assert from "node:assert/strict";
import { access, mkdir, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, beforeEach, test } from "node:test";
import { Worker, type Job } from "bullmq";
import pino from "pino";
import { loadConfig, type Config } from "@mixdown/config";
import { ApiKeyRepository, createJobTables, createPrismaClient, SeparationJobRepository, type PrismaClient } from "@mixdown/db";
import { startTestStack, type TestStack } from "@mixdown/devstack";
import { JobFailure } from "@mixdown/jobs";
import { createQueues, type JobQueues } from "@mixdown/queue";
import { diskFreeBytes } from "@mixdown/storage";
import { JobRunner, type JobEnded, type JobHandler } from "../src/run-job.ts";
import { selectQueues, startWorkerApp } from "../src/worker-app.ts";
import { WorkerMetrics } from "../src/worker-metrics.ts";

let stack: TestStack;
let config: Config;
let prisma: PrismaClient;
let queues: JobQueues;
let runner: JobRunner;
let callerId: number;
let ended: JobEnded[];

before(async () => {
  stack = await startTestStack({ storage: "local" });
  config = loadConfig(stack.env);
  prisma = createPrismaClient(config.DATABASE_URL);
  queues = createQueues({ connection: config.REDIS_URL, prefix: config.QUEUE_PREFIX, attempts: 2, backoffDelayMs: 50 });
  callerId = (await new ApiKeyRepository(prisma).createApiKey({ name: "run-job-test" })).callerId;
  runner = new JobRunner(createJobTables(prisma), {
    tmpDir: config.TMP_DIR,
    logger: pino({ level: "silent" }),
    rowCheckIntervalMs: 200,
  });
  runner.onJobEnded((event) => {
    ended.push(event);
  });
});
after(async () => {
  await queues?.close();
  await prisma?.$disconnect();
  await stack?.stop();
});
beforeEach(async () => {
  ended = [];
  await queues.queue("separation").obliterate({ force: true });
});

/** Queues a new separation row and runs it through `runJob` with `handler` in a real BullMQ worker until it settles. */
async function runSeparation(
  handler: JobHandler<"separation">,
  whileRunning?: (rowId: number) => Promise<void>,
  using: JobRunner = runner,
) {
  const row = await new SeparationJobRepository(prisma).create({
    callerId,
    kind: "stem_split",
    inputKey: "uploads/x.wav",
    inputFormat: "wav",
  });
  const settled = new Promise<void>((resolve) => {
    const worker = new Worker("separation", (job: Job) => using.run("separation", job, handler), {
      connection: { url: config.REDIS_URL, maxRetriesPerRequest: null },
      prefix: config.QUEUE_PREFIX,
    });
    const done = () => void worker.close().then(() => resolve());
    worker.on("completed", done);
    // A failed attempt that will be retried is `delayed`; one that failed for good stays `failed`.
    worker.on("failed", (job) => void job?.getState().then((state) => state === "failed" && done()));
  });
  await queues.enqueue({ queue: "separation", payload: { kind: "stem-split", jobId: row.id } });
  await whileRunning?.(row.id);
  await settled;
  return { rowId: row.id, row: await prisma.separationJob.findUniqueOrThrow({ where: { id: row.id } }) };
}

const outputs = { vocalKey: "v", lossyVocalKey: "lv", backingKey: "b", stems: [], lossyStems: [], models: ["vocals"] };

test("a successful handler's outputs are published, its work directory removed, and the end announced once with the caller", async () => {
  let workDir = "";
  const { rowId, row } = await runSeparation({
    async run(ctx) {
      workDir = ctx.workDir;
      await writeFile(join(ctx.workDir, "scratch"), "x");
      return outputs;
    },
  });
  assert.equal(row.status, "success");
  assert.equal(row.progress, 100);
  assert.equal(row.vocalKey, "v");
  await assert.rejects(access(workDir), "the work directory is gone");
  assert.deepEqual(
    ended.map(({ kind, rowId: id, callerId: caller, status }) => ({ kind, id, caller, status })),
    [{ kind: "separation", id: rowId, caller: callerId, status: "success" }],
  );
});

test("a bad-input failure ends the row error at once with its message, without a retry", async () => {
  let attempts = 0;
  const { row } = await runSeparation({
    async run() {
      attempts++;
      throw new JobFailure("bad-input", "The uploaded audio could not be decoded (no audio stream)");
    },
  });
  assert.equal(attempts, 1);
  assert.equal(row.status, "error");
  assert.equal(row.errorMessage, "The uploaded audio could not be decoded (no audio stream)");
  assert.deepEqual(
    ended.map((e) => [e.status, e.errorMessage]),
    [["error", row.errorMessage]],
  );
});

test("a transient failure is retried, and the last attempt ends the row error naming the attempts", async () => {
  let attempts = 0;
  const { row } = await runSeparation({
    async run() {
      attempts++;
      throw new Error("storage unreachable");
    },
  });
  assert.equal(attempts, 2);
  assert.equal(row.status, "error");
  assert.equal(row.errorMessage, "Processing failed after 2 attempts: storage unreachable");
  assert.equal(ended.length, 1, "the end is announced once, not per attempt");
});

test("a full disk (ENOSPC) is retried, removes the attempt's files, and ends the row naming the full disk", async () => {
  const workDirs: string[] = [];
  const { row } = await runSeparation({
    async run(ctx) {
      workDirs.push(ctx.workDir);
      await writeFile(join(ctx.workDir, "vocals.wav"), Buffer.alloc(1024));
      throw Object.assign(new Error("ENOSPC: no space left on device, write"), {
        code: "ENOSPC",
        path: join(ctx.workDir, "vocals.wav"),
      });
    },
  });
  assert.equal(workDirs.length, 2, "retried");
  for (const dir of workDirs) await assert.rejects(access(dir), "the attempt's partial files are gone");
  assert.equal(row.status, "error");
  assert.match(
    row.errorMessage!,
    /^Processing failed after 2 attempts: The worker's disk is full \(writing .*vocals\.wav\): free space in TMP_DIR/,
  );
});

test("cancel aborts the handler's signal; the row ends cancelled, publishing nothing", async () => {
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const { rowId, row } = await runSeparation(
    {
      async run(ctx) {
        started();
        await new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
        return outputs;
      },
    },
    async (id) => {
      await running;
      assert.deepEqual(runner.runningJobs(), [{ kind: "separation", rowId: id }]);
      assert.equal(runner.cancel("separation", id), true);
    },
  );
  assert.equal(row.status, "cancelled");
  assert.equal(row.vocalKey, null);
  assert.equal(runner.cancel("separation", rowId), false, "a job no longer running cannot be cancelled here");
  assert.deepEqual(
    ended.map((e) => e.status),
    ["cancelled"],
  );
});

/** A handler that waits for its signal, recording when it started and whether `discard` ran. */
function waitsForCancel() {
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const seen = { discarded: false, abortedAt: 0 };
  const handler: JobHandler<"separation"> = {
    async run(ctx) {
      started();
      await new Promise((_, reject) =>
        ctx.signal.addEventListener("abort", () => {
          seen.abortedAt = performance.now();
          reject(ctx.signal.reason);
        }),
      );
      return outputs;
    },
    async discard() {
      seen.discarded = true;
    },
  };
  return { handler, running, seen };
}

test("a row cancelled without a message reaching the worker is noticed by the row check: the handler stops within the check interval", async () => {
  const { handler, running, seen } = waitsForCancel();
  let cancelledAt = 0;
  const { row } = await runSeparation(handler, async (rowId) => {
    await running;
    assert.equal(await createJobTables(prisma).separation.cancel(rowId), true);
    cancelledAt = performance.now();
  });
  assert.equal(row.status, "cancelled");
  assert.ok(
    seen.abortedAt - cancelledAt < 1_000,
    `aborted ${(seen.abortedAt - cancelledAt).toFixed(0)} ms after the row was cancelled`,
  );
  assert.deepEqual(ended, [], "the API ended the row, so the worker announces nothing");
});

test("a row completed by a duplicate delivery stops this attempt but keeps the outputs it published", async () => {
  const { handler, running, seen } = waitsForCancel();
  const { row } = await runSeparation(handler, async (rowId) => {
    await running;
    assert.equal(
      await createJobTables(prisma).separation.complete(rowId, { ...outputs, vocalKey: "from-the-other-delivery" }),
      true,
    );
  });
  assert.equal(row.status, "success");
  assert.equal(row.vocalKey, "from-the-other-delivery");
  assert.ok(seen.abortedAt > 0, "this attempt was stopped");
  assert.equal(seen.discarded, false, "the shared output keys were not deleted");
});

test("the worker refuses to start when WORKER_QUEUES names a kind it cannot run", async () => {
  assert.throws(() => selectQueues("separation,karaoke"), /WORKER_QUEUES names queues this worker has no handler for: karaoke/);
  await assert.rejects(
    startWorkerApp({ ...config, WORKER_QUEUES: "voice-model-build,karaoke" }, pino({ level: "silent" })),
    /karaoke/,
  );
  assert.deepEqual(selectQueues("voice-model-build, separation"), ["separation", "voice-model-build"]);
  assert.deepEqual(selectQueues("gpu"), [
    "separation",
    "voice-conversion",
    "voice-blend",
    "tts",
    "vocal-repair",
    "harmony",
    "voice-model-media",
  ]);
});

test("under WORKER_MIN_FREE_DISK_MB a job waits WORKER_DISK_WAIT_SECONDS, then fails naming the floor, without running or retrying", async () => {
  // A floor a terabyte above what this disk has free: the real statfs of TMP_DIR says no.
  const floorRunner = new JobRunner(createJobTables(prisma), {
    tmpDir: config.TMP_DIR,
    logger: pino({ level: "silent" }),
    minFreeDiskBytes: (await diskFreeBytes(config.TMP_DIR)) + 1e12,
    diskWaitMs: 2_000,
  });
  let runs = 0;
  const started = Date.now();
  const { row } = await runSeparation(
    {
      async run() {
        runs++;
        return outputs;
      },
    },
    undefined,
    floorRunner,
  );
  assert.equal(runs, 0, "the handler never ran");
  assert.ok(Date.now() - started >= 1_900, "it waited for space first");
  assert.equal(row.status, "error");
  assert.match(
    row.errorMessage!,
    /^The worker's TMP_DIR \(.+\) has \d+ MB free, under its floor WORKER_MIN_FREE_DISK_MB=\d+; waited 2 s \(WORKER_DISK_WAIT_SECONDS\) for space/,
  );
  assert.equal(row.errorMessage!.includes("attempts"), false, "not retried");
  assert.deepEqual(await readdir(join(config.TMP_DIR, "jobs")).catch(() => []), [], "no job folder made");
});

test("at start the worker removes the job folders no live job owns (left by killed workers), counts them in /metrics, and keeps fresh ones", async () => {
  const jobs = join(config.TMP_DIR, "jobs");
  const orphan = join(jobs, "separation-9001-0-4242");
  const fresh = join(jobs, "separation-9002-0-4243");
  await mkdir(orphan, { recursive: true });
  await mkdir(fresh, { recursive: true });
  await writeFile(join(orphan, "input.wav"), Buffer.alloc(2_000_000));
  const tenMinutesAgo = new Date(Date.now() - 600_000);
  await utimes(orphan, tenMinutesAgo, tenMinutesAgo);
  const metrics = new WorkerMetrics();
  const app = await startWorkerApp({ ...config, WORKER_QUEUES: "webhook-delivery" }, pino({ level: "silent" }), metrics);
  try {
    assert.deepEqual(
      await readdir(jobs),
      ["separation-9002-0-4243"],
      "the orphan went, the fresh folder (a live job's, for all it knows) stayed",
    );
    const text = await metrics.registry.metrics();
    assert.match(text, /^mixdown_worker_job_folders_swept_total 1$/m);
    assert.match(text, /^mixdown_worker_job_folder_swept_bytes_total 2000000$/m);
    const free = Number(/^mixdown_disk_free_bytes\{dir="TMP_DIR"\} (\S+)$/m.exec(text)?.[1]);
    assert.ok(free > 0, `free bytes reported: ${free}`);
  } finally {
    await app.close();
    await rm(fresh, { recursive: true, force: true });
  }
});
