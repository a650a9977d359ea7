// The retention sweep (src/retention.ts) on the real components: PostgreSQL's job rows, the
// objects in S3 and on local disk, and the maintenance queue that runs it one worker at a time.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import pino from "pino";
import { loadConfig } from "@mixdown/config";
import { createJobTables, createPrismaClient, JobRetention, ResourceDeletions, type PrismaClient } from "@mixdown/db";
import { JobQueues } from "@mixdown/queue";
import { startTestStack, stopChild, type TestStack } from "@mixdown/devstack";
import { RecordPresenter } from "@mixdown/records";
import { createStorage, jobOutputKeys, uploadKey, type ObjectStorage } from "@mixdown/storage";
import { RetentionSweeper, type RetentionSettings } from "../src/retention.ts";

const log = pino({ level: "silent" });
const MINUTE = 60_000;
const NOW = new Date("2026-11-29T12:00:00Z");
const ago = (minutes: number) => new Date(NOW.getTime() - minutes * MINUTE);

let stack: TestStack;
let prisma: PrismaClient;
let queues: JobQueues;
before(async () => {
  stack = await startTestStack({ storage: "s3" });
  prisma = createPrismaClient(stack.env.DATABASE_URL!);
  queues = new JobQueues({ connection: stack.env.REDIS_URL!, prefix: "retention-test", attempts: 1 });
});
after(async () => {
  await queues?.close();
  await prisma?.$disconnect();
  await stack?.stop();
});

/** Stores `key` with `bytes` bytes. */
const put = (storage: ObjectStorage, key: string, bytes = 100) => storage.putStream(key, Readable.from([Buffer.alloc(bytes, 1)]));

/**
 * A separation row with its upload and outputs stored (as the API and the worker store them),
 * plus a file in its output folder that no column names (an earlier attempt's).
 */
async function separation(
  storage: ObjectStorage,
  callerId: number,
  row: { status: "running" | "success" | "error" | "cancelled"; endedMinutesAgo: number | null },
) {
  const inputKey = uploadKey("stem-split", "wav");
  await put(storage, inputKey, 1000);
  const created = await prisma.separationJob.create({
    data: { callerId, kind: "stem_split", inputKey, inputFormat: "wav", status: row.status },
  });
  const out = jobOutputKeys("stem-split", created.id);
  const stems = [
    { instrument: "drums", key: out.file("drums.wav") },
    { instrument: "bass", key: out.file("bass.wav") },
  ];
  const lossyStems = stems.map((s) => ({ instrument: s.instrument, key: s.key.replace(".wav", ".mp3") }));
  for (const s of [...stems, ...lossyStems]) await put(storage, s.key, 200);
  await put(storage, out.file("leftover.tmp"), 50);
  return prisma.separationJob.update({
    where: { id: created.id },
    data: {
      stems,
      lossyStems,
      jobEndTime: row.endedMinutesAgo === null ? null : ago(row.endedMinutesAgo),
      models: ["stems"],
    },
  });
}

async function voiceConversion(storage: ObjectStorage, callerId: number, voiceModelId: number, endedMinutesAgo: number) {
  const inputKey = uploadKey("voice-conversion", "wav");
  const backingKey = uploadKey("voice-conversion", "mp3");
  await put(storage, inputKey, 300);
  await put(storage, backingKey, 300);
  const created = await prisma.voiceConversionJob.create({
    data: {
      callerId,
      voiceModelId,
      inputKey,
      backingKey,
      inputFormat: "wav",
      status: "success",
      jobEndTime: ago(endedMinutesAgo),
    },
  });
  const out = jobOutputKeys("voice-conversion", created.id);
  const keys = {
    outputKey: out.file("output.wav"),
    lossyOutputKey: out.file("output.mp3"),
    recombinedKey: out.file("recombined.mp3"),
  };
  for (const key of Object.values(keys)) await put(storage, key, 400);
  return prisma.voiceConversionJob.update({ where: { id: created.id }, data: keys, include: { voiceModel: true } });
}

async function tts(storage: ObjectStorage, callerId: number, voiceModelId: number, endedMinutesAgo: number) {
  const created = await prisma.ttsJob.create({
    data: { callerId, voiceModelId, inputText: "hello", status: "success", jobEndTime: ago(endedMinutesAgo) },
  });
  const out = jobOutputKeys("tts", created.id);
  const keys = { outputKey: out.file("output.wav"), lossyOutputKey: out.file("output.mp3") };
  for (const key of Object.values(keys)) await put(storage, key, 500);
  return prisma.ttsJob.update({ where: { id: created.id }, data: keys, include: { voiceModel: true } });
}

/** What deletes a job for RETENTION_JOB_MINUTES, as the worker builds it (its rows have ended: nothing to cancel). */
function deletionsOf(storage: ObjectStorage): ResourceDeletions {
  const tables = createJobTables(prisma);
  return new ResourceDeletions(prisma, {
    storage,
    async cancelJob(kind, rowId) {
      await tables[kind].cancel(rowId);
    },
    removeQueueEntry: (kind, rowId) => queues.removeEntry(kind, rowId),
  });
}

/** A recording of the sweeper's metrics. */
function recordingMetrics() {
  const seen = { expired: [] as string[], objects: 0, bytes: 0, sweeps: 0 };
  return {
    seen,
    retentionExpired: (step: string, kind: string, jobs: number) => void seen.expired.push(`${step}:${kind}:${jobs}`),
    retentionDeleted: (_step: string, objects: number, bytes: number) => {
      seen.objects += objects;
      seen.bytes += bytes;
    },
    retentionSweepEnded: () => void seen.sweeps++,
  };
}

for (const driver of ["s3", "local"] as const) {
  describe(`the retention sweep on ${driver} storage`, () => {
    let storage: ObjectStorage;
    let callerId: number;
    let voiceModelId: number;
    const settings: RetentionSettings = { inputMinutes: 60, outputMinutes: 24 * 60, jobMinutes: 0, batch: 2 };
    before(async () => {
      storage = createStorage(loadConfig({ ...stack.env, STORAGE_DRIVER: driver }));
      callerId = (await prisma.caller.create({ data: { name: `retention-${driver}` } })).id;
      voiceModelId = (
        await prisma.voiceModel.create({ data: { title: "v", architecture: "native", sampleRate: 44100, ownerId: callerId } })
      ).id;
    });
    after(() => storage.close());

    test("takes ended jobs' inputs after RETENTION_INPUT_MINUTES and outputs after RETENTION_OUTPUT_MINUTES, never a running or recent job's files, and the records say so", async () => {
      const running = await separation(storage, callerId, { status: "running", endedMinutesAgo: null });
      const recent = await separation(storage, callerId, { status: "success", endedMinutesAgo: 30 });
      const pastInputs = await separation(storage, callerId, { status: "success", endedMinutesAgo: 120 });
      const failedOld = await separation(storage, callerId, { status: "error", endedMinutesAgo: 3 * 24 * 60 });
      const pastBoth = await Promise.all(
        [1, 2, 3].map(() => separation(storage, callerId, { status: "success", endedMinutesAgo: 2 * 24 * 60 })),
      );
      const conversion = await voiceConversion(storage, callerId, voiceModelId, 2 * 24 * 60);
      const speech = await tts(storage, callerId, voiceModelId, 2 * 24 * 60);
      const before = new Set(await storage.list(""));

      const metrics = recordingMetrics();
      const sweeper = new RetentionSweeper({
        deletions: deletionsOf(storage),
        retention: new JobRetention(prisma),
        storage,
        settings,
        log,
        metrics,
        now: () => NOW,
      });
      const totals = await sweeper.sweep();

      const after = new Set(await storage.list(""));
      const gone = [...before].filter((k) => !after.has(k)).sort();
      const sepOutputs = (id: number) => [...before].filter((k) => k.startsWith(jobOutputKeys("stem-split", id).prefix));
      const expected = [
        pastInputs.inputKey,
        failedOld.inputKey,
        ...sepOutputs(failedOld.id),
        ...pastBoth.flatMap((row) => [row.inputKey, ...sepOutputs(row.id)]),
        conversion.inputKey,
        conversion.backingKey!,
        conversion.outputKey!,
        conversion.lossyOutputKey!,
        conversion.recombinedKey!,
        speech.outputKey!,
        speech.lossyOutputKey!,
      ].sort();
      assert.deepEqual(gone, expected);
      // the running and the recent job keep everything; the one past its input time keeps its outputs
      for (const row of [running, recent]) assert.ok([row.inputKey, ...sepOutputs(row.id)].every((k) => after.has(k)));
      assert.ok(sepOutputs(pastInputs.id).every((k) => after.has(k)));
      assert.equal(sepOutputs(pastInputs.id).length, 5);

      assert.deepEqual(totals.expired, {
        inputs: { stem_split: 5, voice_conversion: 1 },
        outputs: { stem_split: 4, voice_conversion: 1, tts: 1 },
        rows: {},
      });
      // inputs: 5 x 1000 + 2 x 300; outputs: 4 x (4 x 200 + 50) + 3 x 400 + 2 x 500
      assert.deepEqual(totals.objects, { inputs: 7, outputs: 4 * 5 + 3 + 2 });
      assert.deepEqual(totals.bytes, { inputs: 5600, outputs: 4 * 850 + 1200 + 1000 });
      assert.equal(metrics.seen.objects, 7 + 25);
      assert.equal(metrics.seen.bytes, 5600 + 5600);
      assert.equal(metrics.seen.sweeps, 1);
      assert.ok(metrics.seen.expired.includes("outputs:tts:1"));
      if (driver === "local") {
        // a swept job's output folder goes with its files
        const local = storage as unknown as { pathFor(key: string): string };
        const { stat } = await import("node:fs/promises");
        await assert.rejects(stat(local.pathFor(jobOutputKeys("stem-split", pastBoth[0]!.id).prefix.slice(0, -1))), {
          code: "ENOENT",
        });
      }

      // The rows: keys nulled and lists emptied, when, and what the records present.
      const presenter = new RecordPresenter(storage, {
        ttlSeconds: 60,
        apiBaseUrl: "http://x/api/kits/v1",
        outputRetentionMinutes: 24 * 60,
      });
      const swept = await prisma.separationJob.findUniqueOrThrow({ where: { id: pastBoth[0]!.id } });
      assert.deepEqual(swept.outputsExpiredAt, NOW);
      assert.deepEqual(swept.inputsExpiredAt, NOW);
      assert.equal(swept.inputKey, pastBoth[0]!.inputKey, "the input's key stays on the row: a name, not a file");
      const record = await presenter.separationJob(swept);
      assert.equal(record.status, "success");
      assert.deepEqual(
        [record.vocalAudioFileUrl, record.backingAudioFileUrl, record.stemFileUrls, record.lossyStemFileUrls],
        [null, null, [], []],
      );
      assert.equal(record.outputsExpiredAt, "2026-11-29 12:00:00.000000 +00:00");
      assert.equal(record.outputsExpireAt, record.outputsExpiredAt);
      const kept = await presenter.separationJob(await prisma.separationJob.findUniqueOrThrow({ where: { id: pastInputs.id } }));
      assert.equal(kept.stemFileUrls.length, 2);
      assert.equal(kept.outputsExpiredAt, null);
      assert.equal(kept.outputsExpireAt, "2026-11-30 10:00:00.000000 +00:00", "its end (2 hours ago) plus a day");
      assert.equal(
        (await presenter.separationJob(await prisma.separationJob.findUniqueOrThrow({ where: { id: running.id } })))
          .outputsExpireAt,
        null,
      );
      const conv = await presenter.voiceConversionJob(
        await prisma.voiceConversionJob.findUniqueOrThrow({ where: { id: conversion.id }, include: { voiceModel: true } }),
      );
      assert.deepEqual([conv.outputFileUrl, conv.lossyOutputFileUrl, conv.recombinedAudioFileUrl], [null, null, null]);
      assert.equal(conv.outputsExpiredAt, "2026-11-29 12:00:00.000000 +00:00");

      // A second sweep finds nothing more: idempotent.
      const again = await sweeper.sweep();
      assert.deepEqual(again.objects, { inputs: 0, outputs: 0 });
      assert.deepEqual(new Set(await storage.list("")), after);
    });

    test("killed between deleting a batch's files and marking its rows, or between batches, the next sweep finishes the work and orphans nothing", async () => {
      const rows = await Promise.all(
        [1, 2, 3, 4, 5].map(() => separation(storage, callerId, { status: "cancelled", endedMinutesAgo: 10 * 24 * 60 })),
      );
      const ids = rows.map((r) => r.id);
      const keysOf = async () =>
        (await storage.list("")).filter((k) =>
          rows.some((r) => k === r.inputKey || k.startsWith(jobOutputKeys("stem-split", r.id).prefix)),
        );
      assert.equal((await keysOf()).length, 5 * 6);

      // The first batch's objects are deleted, then the process dies before its rows are marked.
      class DiesBeforeMarking extends JobRetention {
        override async markExpired(): Promise<number> {
          throw new Error("killed");
        }
      }
      const dying = new RetentionSweeper({
        deletions: deletionsOf(storage),
        retention: new DiesBeforeMarking(prisma),
        storage,
        settings,
        log,
        now: () => NOW,
      });
      await assert.rejects(dying.sweep(), /killed/);
      const unmarked = await prisma.separationJob.count({ where: { id: { in: ids }, inputsExpiredAt: null } });
      assert.equal(unmarked, 5, "no row says its files are gone");
      assert.equal((await keysOf()).length, 5 * 6 - 2, "the first batch's (2 jobs') inputs went");

      // Stopped (the worker's shutdown) after its first batch.
      const stopping = new AbortController();
      const sweeper = new RetentionSweeper({
        deletions: deletionsOf(storage),
        retention: new JobRetention(prisma),
        storage: new Proxy(storage, {
          get(target, name, receiver) {
            const value = Reflect.get(target, name, receiver);
            if (name !== "deleteMany") return typeof value === "function" ? value.bind(target) : value;
            return async (...args: Parameters<ObjectStorage["deleteMany"]>) => {
              await target.deleteMany(...args);
              stopping.abort();
            };
          },
        }),
        settings,
        log,
        now: () => NOW,
      });
      await sweeper.sweep(stopping.signal);
      assert.equal(await prisma.separationJob.count({ where: { id: { in: ids }, inputsExpiredAt: null } }), 3);

      await new RetentionSweeper({
        deletions: deletionsOf(storage),
        retention: new JobRetention(prisma),
        storage,
        settings,
        log,
        now: () => NOW,
      }).sweep();
      assert.deepEqual(await keysOf(), []);
      assert.equal(await prisma.separationJob.count({ where: { id: { in: ids }, outputsExpiredAt: null } }), 0);
    });

    test("RETENTION_JOB_MINUTES deletes ended rows past it with everything they still own, and nothing else", async () => {
      const old = await separation(storage, callerId, { status: "success", endedMinutesAgo: 40 * 24 * 60 });
      const young = await separation(storage, callerId, { status: "success", endedMinutesAgo: 10 * 24 * 60 });
      const running = await separation(storage, callerId, { status: "running", endedMinutesAgo: null });
      const oldSpeech = await tts(storage, callerId, voiceModelId, 40 * 24 * 60);
      await prisma.idempotencyKey.create({
        data: {
          callerId,
          key: `k-${old.id}`,
          fingerprint: "f",
          route: "/stem-splits",
          resourceKind: "stem_split",
          resourceId: old.id,
        },
      });
      await prisma.webhookDelivery.create({
        data: { jobKind: "separation", rowId: old.id, event: "success", url: "http://x.invalid/hook", deliveredAt: new Date() },
      });
      const totals = await new RetentionSweeper({
        deletions: deletionsOf(storage),
        retention: new JobRetention(prisma),
        storage,
        // files are kept for good here: the rows take theirs with them
        settings: { inputMinutes: 0, outputMinutes: 0, jobMinutes: 30 * 24 * 60, batch: 1 },
        log,
        now: () => NOW,
      }).sweep();
      assert.ok((totals.expired.rows.separation ?? 0) >= 1 && totals.expired.rows.tts === 1, JSON.stringify(totals.expired.rows));
      assert.equal(await prisma.separationJob.count({ where: { id: old.id } }), 0);
      assert.equal(await prisma.ttsJob.count({ where: { id: oldSpeech.id } }), 0);
      assert.equal(await storage.exists(old.inputKey), false);
      assert.deepEqual(await storage.list(jobOutputKeys("stem-split", old.id).prefix), []);
      assert.deepEqual(await storage.list(jobOutputKeys("tts", oldSpeech.id).prefix), []);
      assert.equal(await prisma.idempotencyKey.count({ where: { resourceKind: "stem_split", resourceId: old.id } }), 0);
      assert.equal(await prisma.webhookDelivery.count({ where: { jobKind: "separation", rowId: old.id } }), 0);
      for (const row of [young, running]) {
        assert.equal(await prisma.separationJob.count({ where: { id: row.id } }), 1);
        assert.ok(await storage.exists(row.inputKey));
        assert.equal((await storage.list(jobOutputKeys("stem-split", row.id).prefix)).length, 5);
      }
      assert.equal(await prisma.voiceModel.count({ where: { id: voiceModelId } }), 1, "the voice model a deleted job used stays");
      // the next test counts what it sweeps: these rows are not its own
      await prisma.separationJob.deleteMany({ where: { id: { in: [young.id, running.id] } } });
    });

    test("0 minutes keeps files for good", async () => {
      const row = await separation(storage, callerId, { status: "success", endedMinutesAgo: 365 * 24 * 60 });
      const totals = await new RetentionSweeper({
        deletions: deletionsOf(storage),
        retention: new JobRetention(prisma),
        storage,
        settings: { inputMinutes: 0, outputMinutes: 0, jobMinutes: 0, batch: 10 },
        log,
        now: () => NOW,
      }).sweep();
      assert.deepEqual(totals.objects, { inputs: 0, outputs: 0 });
      assert.ok(await storage.exists(row.inputKey));
      assert.equal((await storage.list(jobOutputKeys("stem-split", row.id).prefix)).length, 5);
      await prisma.separationJob.delete({ where: { id: row.id } });
    });
  });
}

describe("the maintenance queue", () => {
  const workerScript = fileURLToPath(new URL("../testing/maintenance-worker.ts", import.meta.url));

  test("runs the sweep every interval, one run at a time across workers, and a run whose worker is killed is run again by another", async () => {
    const redisUrl = stack.env.REDIS_URL!;
    const prefix = `maint-${Date.now()}`;
    const events = new Redis(redisUrl);
    const key = `${prefix}:test-log`;
    // Two workers in their own processes; each run logs its start and end to a Redis list, and the
    // first run of the process named "dies" hangs until that process is killed.
    const spawnWorker = (name: string) =>
      spawn(process.execPath, ["--import", "tsx", workerScript], {
        env: { ...process.env, REDIS_URL: redisUrl, PREFIX: prefix, NAME: name, LOG_KEY: key, EVERY_MS: "300" },
        stdio: ["ignore", "inherit", "inherit"],
      });
    const dies = spawnWorker("dies");
    const lives = spawnWorker("lives");
    try {
      const deadline = Date.now() + 30_000;
      let log: string[] = [];
      // The hanging run starts on whichever takes it first; kill "dies" once it hangs.
      while (Date.now() < deadline) {
        log = await events.lrange(key, 0, -1);
        if (log.includes("start dies")) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(log.includes("start dies"), `the "dies" worker never ran a sweep: ${log.join(", ")}`);
      const killedAt = log.length;
      dies.kill("SIGKILL");
      // Its entry's lock (1 s) runs out; the stalled check gives it to "lives", which runs the sweeps from then on.
      while (Date.now() < deadline) {
        log = await events.lrange(key, 0, -1);
        if (log.slice(killedAt).filter((e) => e === "end lives").length >= 3) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const after = log.slice(killedAt);
      assert.ok(after.filter((e) => e === "end lives").length >= 3, `runs after the kill: ${after.join(", ")}`);
      // Never two at once: while the hanging run held the queue nothing else started, and every
      // other run's start is followed by its own end before the next start.
      assert.equal(log[killedAt - 1], "start dies");
      const others = log.filter((entry, i) => !(entry === "start dies" && i === killedAt - 1));
      for (let i = 0; i < others.length - 1; i += 2) {
        const [start, end] = [others[i]!, others[i + 1]!];
        assert.ok(start.startsWith("start ") && end === start.replace("start", "end"), `runs overlap: ${log.join(", ")}`);
      }
    } finally {
      await stopChild(dies, "SIGKILL").catch(() => undefined);
      await stopChild(lives, "SIGTERM");
      await events.quit();
    }
  });
});
