import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { after, before, test } from "node:test";
import { loadConfig } from "@mixdown/config";
import {
  ApiKeyRepository,
  createPrismaClient,
  DashboardSignInRepository,
  SeparationJobRepository,
  VoiceConversionJobRepository,
  VoiceModelRepository,
  type PrismaClient,
} from "@mixdown/db";
import { startTestStack, type TestStack } from "@mixdown/devstack";
import { createQueues, type JobQueues } from "@mixdown/queue";
import { createStorage, jobOutputKeys, uploadKey, voiceModelKeys, type ObjectStorage } from "@mixdown/storage";
import { runCli } from "./run-cli.ts";

let stack: TestStack;
let prisma: PrismaClient;
let storage: ObjectStorage;
let queues: JobQueues;
let env: Record<string, string>;
let home: string;

before(async () => {
  stack = await startTestStack({ storage: "local" });
  const config = loadConfig({ ...stack.env, LOG_LEVEL: "silent" });
  prisma = createPrismaClient(config.DATABASE_URL);
  storage = createStorage(config);
  queues = createQueues({ connection: config.REDIS_URL, prefix: config.QUEUE_PREFIX, attempts: 1 });
  home = await mkdtemp(path.join(os.tmpdir(), "mixdown-cli-purge-"));
  env = { ...(stack.env as Record<string, string>), MIXDOWN_HOME: home };
});
after(async () => {
  await queues?.close();
  await storage?.close();
  await prisma?.$disconnect();
  await stack?.stop();
  await rm(home, { recursive: true, force: true });
});

const put = (key: string) => storage.putStream(key, Readable.from([Buffer.from(key)]));

/** A caller with a key, a sign-in code, an ended separation (upload, outputs, webhook owed, idempotency key), a voice model with files and a queued conversion using it. */
async function callerWithEverything(name: string) {
  const key = await new ApiKeyRepository(prisma).createApiKey({ name });
  await new DashboardSignInRepository(prisma).issue({ apiKeyId: key.id, apiKey: key.key });
  const inputKey = uploadKey("vocal-separation", "wav");
  await put(inputKey);
  const separation = await new SeparationJobRepository(prisma).create({
    callerId: key.callerId,
    kind: "vocal_separation",
    inputKey,
    inputFormat: "wav",
  });
  const output = jobOutputKeys("vocal-separation", separation.id).file("vocals.wav");
  await put(output);
  await prisma.separationJob.update({
    where: { id: separation.id },
    data: { status: "success", vocalKey: output, jobEndTime: new Date() },
  });
  await prisma.webhookDelivery.create({
    data: { jobKind: "separation", rowId: separation.id, event: "success", url: "https://hooks.example/x", apiKeyId: key.id },
  });
  await prisma.idempotencyKey.create({
    data: {
      callerId: key.callerId,
      key: "k1",
      fingerprint: "f",
      route: "/x",
      resourceKind: "vocal_separation",
      resourceId: separation.id,
    },
  });
  const model = await new VoiceModelRepository(prisma).create({
    title: "Voice",
    architecture: "native",
    sampleRate: 40000,
    ownerId: key.callerId,
  });
  const modelFile = voiceModelKeys(model.id).model;
  await put(modelFile);
  await prisma.voiceModel.update({ where: { id: model.id }, data: { fileKey: modelFile } });
  const take = uploadKey("voice-conversion", "wav");
  await put(take);
  const conversion = await new VoiceConversionJobRepository(prisma).create({
    callerId: key.callerId,
    voiceModelId: model.id,
    inputKey: take,
    inputFormat: "wav",
    params: {},
  });
  await queues.enqueue({ queue: "voice-conversion", payload: { jobId: conversion.id } });
  return { key, separation, conversion, model, files: [inputKey, output, modelFile, take] };
}

test("callers purge: asks first (nothing deleted without yes); then every row, file, key and queue entry of the caller goes and nothing of another caller", async () => {
  const target = await callerWithEverything("forget-me");
  const other = await callerWithEverything("keep-me");
  const objectsBefore = (await storage.list("")).sort();

  const refused = await runCli(["callers", "purge", String(target.key.callerId)], env, "no\n");
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(
    refused.stdout,
    /Caller \d+ \("forget-me"\): 1 separation and stem split jobs, 1 voice conversions, 0 text-to-speech jobs, 0 voice blends, 1 voice models, 1 API keys\./,
  );
  assert.match(refused.stderr, /Nothing was deleted\./);
  assert.deepEqual((await storage.list("")).sort(), objectsBefore);
  assert.equal(await prisma.caller.count({ where: { id: target.key.callerId } }), 1);

  const purged = await runCli(["callers", "purge", "forget-me", "--yes"], env);
  assert.equal(purged.code, 0, purged.stderr);
  assert.match(purged.stdout, /Purged caller \d+ \("forget-me"\)/);
  assert.match(purged.stdout, /jobs: 1 separation, 1 voice-conversion, 0 voice-blend, 0 tts/);
  assert.match(purged.stdout, /voice models: 1/);
  assert.match(purged.stdout, /API keys: 1, dashboard sign-in codes: 1/);
  assert.match(purged.stdout, /idempotency keys: 1, webhook deliveries: 1/);

  // Storage: exactly the target's files are gone.
  assert.deepEqual(
    (await storage.list("")).sort(),
    objectsBefore.filter((k) => !target.files.includes(k)),
  );
  for (const key of other.files) assert.ok(await storage.exists(key), key);
  // Tables: nothing of the target, everything of the other.
  const t = target.key.callerId;
  assert.equal(await prisma.caller.count({ where: { id: t } }), 0);
  assert.equal(await prisma.apiKey.count({ where: { callerId: t } }), 0);
  assert.equal(await prisma.dashboardSignInCode.count({ where: { apiKeyId: target.key.id } }), 0);
  assert.equal(await prisma.separationJob.count({ where: { callerId: t } }), 0);
  assert.equal(await prisma.voiceConversionJob.count({ where: { callerId: t } }), 0);
  assert.equal(await prisma.voiceModel.count({ where: { ownerId: t } }), 0);
  assert.equal(await prisma.idempotencyKey.count({ where: { callerId: t } }), 0);
  assert.equal(await prisma.webhookDelivery.count({ where: { rowId: target.separation.id, jobKind: "separation" } }), 0);
  assert.equal(await prisma.pendingDeletion.count(), 0);
  assert.equal(
    await queues.queue("voice-conversion").getJob(`voice-conversion-${target.conversion.id}`),
    undefined,
    "the queued job is gone",
  );

  const o = other.key.callerId;
  assert.equal(await prisma.apiKey.count({ where: { callerId: o } }), 1);
  assert.equal(await prisma.separationJob.count({ where: { callerId: o } }), 1);
  assert.equal(await prisma.voiceConversionJob.count({ where: { callerId: o, status: "running" } }), 1);
  assert.equal(await prisma.voiceModel.count({ where: { ownerId: o } }), 1);
  assert.equal(await prisma.idempotencyKey.count({ where: { callerId: o } }), 1);
  assert.equal(await prisma.webhookDelivery.count({ where: { rowId: other.separation.id, jobKind: "separation" } }), 1);
  assert.ok(await queues.queue("voice-conversion").getJob(`voice-conversion-${other.conversion.id}`));

  const again = await runCli(["callers", "purge", String(t), "--yes"], env);
  assert.equal(again.code, 2, again.stdout);
  assert.match(again.stderr, /No caller "\d+"/);
});
