import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { UnrecoverableError, Worker, type Job } from "bullmq";
import { loadConfig, type Config } from "@mixdown/config";
import {
  ApiKeyRepository,
  createPrismaClient,
  RunningJobRepository,
  SeparationJobRepository,
  VoiceBlendJobRepository,
  VoiceModelRepository,
  type PrismaClient,
} from "@mixdown/db";
import { startTestStack, type TestStack } from "@mixdown/devstack";
import { bullJobId, createQueues, JOB_KINDS, Reconciler, rowIdOf, type JobQueues } from "../src/index.ts";

let stack: TestStack;
let config: Config;
let prisma: PrismaClient;
let queues: JobQueues;
let reconciler: Reconciler;
let separations: SeparationJobRepository;
let callerId: number;

before(async () => {
  stack = await startTestStack({ storage: "local" });
  config = loadConfig(stack.env);
  prisma = createPrismaClient(config.DATABASE_URL);
  queues = createQueues({ connection: config.REDIS_URL, prefix: config.QUEUE_PREFIX, attempts: 2 });
  separations = new SeparationJobRepository(prisma);
  reconciler = new Reconciler({ queues, source: new RunningJobRepository(prisma), graceSeconds: 30 });
  callerId = (await new ApiKeyRepository(prisma).createApiKey({ name: "reconciler-test" })).callerId;
});
after(async () => {
  await queues?.close();
  await prisma?.$disconnect();
  await stack?.stop();
});
beforeEach(async () => {
  await Promise.all(JOB_KINDS.map((kind) => queues.queue(kind).obliterate({ force: true })));
  await prisma.separationJob.deleteMany();
  await prisma.voiceBlendJob.deleteMany();
  await prisma.voiceModel.deleteMany();
});

const later = () => new Date(Date.now() + 60_000);

test("enqueue uses the row's deterministic id, so a second add is a no-op", async () => {
  await queues.enqueue({ queue: "separation", payload: { kind: "stem-split", jobId: 41 } });
  await queues.enqueue({ queue: "separation", payload: { kind: "stem-split", jobId: 41 } });
  const counts = await queues.queue("separation").getJobCounts("waiting");
  assert.equal(counts.waiting, 1);
  const job = await queues.queue("separation").getJob("separation-41");
  assert.deepEqual(job?.data, { kind: "stem-split", jobId: 41 });
  assert.equal(job?.name, "stem-split");
  assert.equal(job?.opts.attempts, 2);
  assert.deepEqual(job?.opts.backoff, { type: "exponential", delay: 5000 });
});

test("re-queues an orphaned running row (inserted without a queue entry) once past the grace period", async () => {
  const row = await separations.create({ callerId, kind: "vocal_separation", inputKey: "uploads/x.wav", inputFormat: "wav" });
  const early = await reconciler.reconcileOnce(new Date());
  assert.equal(early.requeued.length, 0, "a fresh row is left to its create request");
  const result = await reconciler.reconcileOnce(later());
  assert.deepEqual(result.requeued, [{ queue: "separation", payload: { kind: "vocal-separation", jobId: row.id } }]);
  const job = await queues.queue("separation").getJob(bullJobId("separation", row.id));
  assert.deepEqual(job?.data, { kind: "vocal-separation", jobId: row.id });
  assert.notEqual((await separations.findById(row.id))?.enqueuedAt, null);
  const again = await reconciler.reconcileOnce(later());
  assert.equal(again.requeued.length, 0, "a row with a live entry is left alone");
});

test("sets enqueuedAt on a row whose entry exists (crash between add and update)", async () => {
  const row = await separations.create({ callerId, kind: "stem_split", inputKey: "uploads/y.wav", inputFormat: "wav" });
  await queues.enqueue({ queue: "separation", payload: { kind: "stem-split", jobId: row.id } });
  const result = await reconciler.reconcileOnce(later());
  assert.equal(result.requeued.length, 0);
  assert.equal(result.marked.length, 1);
  assert.notEqual((await separations.findById(row.id))?.enqueuedAt, null);
});

test("re-adds a completed entry whose row is still running; leaves finished rows alone", async () => {
  const running = await separations.create({ callerId, kind: "stem_split", inputKey: "uploads/z.wav", inputFormat: "wav" });
  const done = await separations.create({ callerId, kind: "stem_split", inputKey: "uploads/w.wav", inputFormat: "wav" });
  await prisma.separationJob.update({ where: { id: done.id }, data: { status: "success", jobEndTime: new Date() } });
  for (const id of [running.id, done.id]) {
    await queues.enqueue({ queue: "separation", payload: { kind: "stem-split", jobId: id } });
    await markCompleted(bullJobId("separation", id));
  }
  const result = await reconciler.reconcileOnce(later());
  assert.deepEqual(result.requeued.map(rowIdOf), [running.id]);
  assert.equal(await queues.queue("separation").getJobState(bullJobId("separation", running.id)), "waiting");
  assert.equal(await queues.queue("separation").getJobState(bullJobId("separation", done.id)), "completed");
});

test("a failed-for-good entry of a running row ends the row as error (blend: output model failed too)", async () => {
  const models = new VoiceModelRepository(prisma);
  const a = await models.create({ title: "A", architecture: "native", sampleRate: 40000 });
  const b = await models.create({ title: "B", architecture: "native", sampleRate: 40000 });
  const { job, outputModel } = await new VoiceBlendJobRepository(prisma).create({
    callerId,
    modelIds: [a.id, b.id],
    alphas: [0.5, 0.5],
    title: "AB",
    architecture: "native",
    sampleRate: 40000,
  });
  await queues.enqueue({ queue: "voice-blend", payload: { jobId: job.id } });
  await markFailed(bullJobId("voice-blend", job.id), "weights do not match");
  const result = await reconciler.reconcileOnce(later());
  assert.equal(result.failed.length, 1);
  const row = await prisma.voiceBlendJob.findUnique({ where: { id: job.id } });
  assert.equal(row?.status, "error");
  assert.match(row?.errorMessage ?? "", /weights do not match/);
  assert.equal((await models.findById(outputModel.id))?.state, "failed");
});

test("a ready voice model lacking media gets a media entry; a failed-for-good one records mediaError and is not retried", async () => {
  const models = new VoiceModelRepository(prisma);
  const owed = await models.create({
    title: "Owed",
    architecture: "native",
    sampleRate: 44100,
    fileKey: "voice-models/x/model.onnx",
  });
  await models.create({
    title: "Done",
    architecture: "native",
    sampleRate: 44100,
    demoKey: "voice-models/y/demo.mp3",
    imageKey: "voice-models/y/cover.png",
  });
  await models.create({ title: "Pending", architecture: "native", sampleRate: 44100, state: "pending" });

  const first = await reconciler.reconcileOnce(later());
  assert.deepEqual(first.requeued, [{ queue: "voice-model-media", payload: { voiceModelId: owed.id } }]);
  assert.notEqual((await models.findById(owed.id))?.mediaEnqueuedAt, null);
  assert.equal(await queues.queue("voice-model-media").getJobState(bullJobId("voice-model-media", owed.id)), "waiting");

  await markFailed(bullJobId("voice-model-media", owed.id), "the model file is missing", "voice-model-media");
  const second = await reconciler.reconcileOnce(later());
  assert.equal(second.failed.length, 1);
  assert.match((await models.findById(owed.id))?.mediaError ?? "", /the model file is missing/);
  const third = await reconciler.reconcileOnce(later());
  assert.equal(third.checked, 0, "a model whose media failed for good is not owed any more");
});

test("a native voice awaiting its build gets a build entry; one whose build failed for good ends failed with the reason", async () => {
  const models = new VoiceModelRepository(prisma);
  const pending = await models.create({
    title: "Mine",
    architecture: "native",
    sampleRate: 44100,
    state: "pending",
    referenceKey: "uploads/voice-models/r.wav",
  });
  // A blend's output model is pending too, but it is the blend job's to finish.
  await models.create({ title: "Blend output", architecture: "native", sampleRate: 44100, state: "pending" });

  const first = await reconciler.reconcileOnce(later());
  assert.deepEqual(first.requeued, [{ queue: "voice-model-build", payload: { voiceModelId: pending.id } }]);
  assert.notEqual((await models.findById(pending.id))?.buildEnqueuedAt, null);

  await markFailed(bullJobId("voice-model-build", pending.id), "no voiced audio in the reference", "voice-model-build");
  const second = await reconciler.reconcileOnce(later());
  assert.equal(second.failed.length, 1);
  const failed = await models.findById(pending.id);
  assert.equal(failed?.state, "failed");
  assert.match(failed?.buildError ?? "", /no voiced audio/);
  assert.equal((await reconciler.reconcileOnce(later())).checked, 0);
});

test("passes in two processes do not overlap (Redis lock)", async () => {
  await separations.create({ callerId, kind: "stem_split", inputKey: "uploads/v.wav", inputFormat: "wav" });
  const other = new Reconciler({ queues, source: new RunningJobRepository(prisma), graceSeconds: 30 });
  const [a, b] = await Promise.all([reconciler.reconcileOnce(later()), other.reconcileOnce(later())]);
  assert.equal([a, b].filter((r) => r.ran).length >= 1, true);
  assert.equal(a.requeued.length + b.requeued.length, 1);
});

/** Takes the next waiting job of `queue` and finishes it the way a worker would, without running one. */
async function finishNext(queue: string, id: string, finish: (job: Job) => Promise<unknown>): Promise<void> {
  const worker = new Worker(queue, null, {
    connection: { url: config.REDIS_URL, maxRetriesPerRequest: null },
    prefix: config.QUEUE_PREFIX,
  });
  try {
    const job = await worker.getNextJob("token");
    assert.equal(job?.id, id);
    await finish(job!);
  } finally {
    await worker.close();
  }
}

const markCompleted = (id: string) => finishNext("separation", id, (job) => job.moveToCompleted("done", "token", false));
const markFailed = (id: string, reason: string, queue = "voice-blend") =>
  finishNext(queue, id, (job) => job.moveToFailed(new UnrecoverableError(reason), "token", false));
