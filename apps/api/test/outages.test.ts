import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { loadConfig } from "@mixdown/config";
import { readFile } from "node:fs/promises";
import { ApiKeyRepository, IdempotencyKeyRepository, VoiceModelRepository } from "@mixdown/db";
import pino from "pino";
import { IdempotentCreates } from "../src/idempotency/idempotent-creates.ts";
import { startTestStack } from "@mixdown/devstack";
import { buildApp } from "../src/index.ts";
import { audio, footprint, multipart, type Harness } from "./helpers.ts";
import { WireCheck } from "./support/wire-check.ts";

// The app remembers resolved keys for a minute, as it does in production (5 s there): a create
// whose caller is known goes on to store its upload before it first needs the database, which is
// the path that could leave an object behind.
let h: Harness;
let auth: { authorization: string };
before(async () => {
  const stack = await startTestStack({ storage: "s3" });
  const config = loadConfig({ ...stack.env, LOG_LEVEL: "silent" });
  const app = await buildApp(config, { authCacheTtlMs: 60_000 });
  // The 503s of an outage are checked against the document too.
  const wire = new WireCheck();
  wire.attach(app);
  await app.ready();
  h = {
    stack,
    config,
    app,
    prisma: app.ctx.prisma,
    wire,
    newCaller: () => Promise.reject(new Error("unused")),
    createModel: () => Promise.reject(new Error("unused")),
    async stop() {
      await app.close();
      await stack.stop();
      await wire.verify();
      assert.deepEqual(wire.problems, [], "answers that differ from the OpenAPI document");
    },
  };
  const created = await new ApiKeyRepository(h.prisma).createApiKey({ name: "outages" });
  auth = { authorization: `Bearer ${created.key}` };
  // Resolves the key once, while the database is there.
  assert.equal((await list()).statusCode, 200);
});
after(async () => {
  await h?.stack.postgres.resume();
  await h?.stack.s3.resume();
  await h?.stop();
});

const list = () => h.app.inject({ method: "GET", url: "/api/kits/v1/vocal-separations", headers: auth });
async function create(idempotencyKey?: string) {
  const form = multipart({}, [{ name: "inputFile", filename: "song.wav", content: await audio("wav") }]);
  return h.app.inject({
    method: "POST",
    url: "/api/kits/v1/vocal-separations",
    headers: { ...form.headers, ...auth, ...(idempotencyKey ? { "idempotency-key": idempotencyKey } : {}) },
    payload: form.payload,
  });
}

function assertUnavailable(res: Awaited<ReturnType<typeof list>>, service: RegExp): void {
  assert.equal(res.statusCode, 503, res.body);
  assert.equal(res.headers["retry-after"], "5");
  assert.match(String(res.headers["content-type"]), /^application\/json/);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ["error", "message", "statusCode"]);
  assert.equal(body.statusCode, 503);
  assert.equal(body.error, "Service Unavailable");
  assert.match(body.message, service);
  assert.doesNotMatch(res.body, /\bat .*\.ts:\d+|prisma|ECONNREFUSED/i, "no stack or driver detail in the answer");
}

test("while PostgreSQL is away, reads and creates answer 503 naming the database; a create leaves no object, row or queued job; all works again once it is back", async () => {
  const before = await footprint(h);

  await h.stack.postgres.halt();
  try {
    assertUnavailable(await list(), /^the database is unavailable/);
    // Stores the upload, then fails to write the row: the upload must be deleted again.
    assertUnavailable(await create(), /^the database is unavailable/);
    assertUnavailable(await create("during-db-outage"), /^the database is unavailable/);
    assert.deepEqual(await h.app.ctx.storage.list("uploads/"), [], "no upload is left in S3");
    assert.equal(await h.app.ctx.queues.queue("separation").count(), 0, "nothing was queued");
  } finally {
    await h.stack.postgres.resume();
  }
  assert.deepEqual(await footprint(h), before);

  assert.equal((await list()).statusCode, 200);
  const res = await create();
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().status, "running");
  assert.equal(await h.app.ctx.queues.queue("separation").count(), 1);
  await h.prisma.separationJob.deleteMany();
  await h.app.ctx.queues.queue("separation").obliterate({ force: true });
  await h.app.ctx.storage.deletePrefix("uploads/");
});

test("an Idempotency-Key claimed before PostgreSQL went away is released once it is back, so the client's retry is not refused", async () => {
  const keys = new IdempotentCreates(new IdempotencyKeyRepository(h.prisma), pino({ level: "silent" }));
  const callerId = (await h.prisma.caller.findFirstOrThrow()).id;
  const op = (create: () => Promise<{ id: number }>) =>
    keys.run({
      callerId,
      key: "claimed-then-db-gone",
      route: "/t",
      fingerprint: "f",
      kind: "vocal_separation",
      create,
      current: async (id) => ({ id }),
    });
  // The claim is written, then the database goes before the failed create can release it.
  await assert.rejects(
    op(async () => {
      await h.stack.postgres.halt();
      throw new Error("the create failed");
    }),
    /the create failed/,
  );
  await h.stack.postgres.resume();
  const deadline = Date.now() + 30_000;
  for (;;) {
    const claim = await h.prisma.idempotencyKey.findFirst({ where: { key: "claimed-then-db-gone" } });
    if (!claim) break;
    assert.ok(Date.now() < deadline, "the claim was not released within 30 s of the database's return");
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(await op(async () => ({ id: 7 })), { record: { id: 7 }, replayed: false });
});

test("while S3 is away, a create answers 503 naming object storage and stores nothing; reads still answer; creates work once it is back", async () => {
  const before = await footprint(h);
  await h.stack.s3.halt();
  try {
    assertUnavailable(await create(), /^object storage is unavailable/);
    assertUnavailable(await create("during-s3-outage"), /^object storage is unavailable/);
    assert.equal(await h.prisma.separationJob.count(), before.rows, "no row was written");
    assert.equal(await h.app.ctx.queues.queue("separation").count(), 0, "nothing was queued");
    assert.equal((await list()).statusCode, 200, "listing needs no storage (URLs are signed locally)");
  } finally {
    await h.stack.s3.resume();
  }
  assert.deepEqual(await footprint(h), before);

  const res = await create("during-s3-outage");
  assert.equal(res.statusCode, 200, "the key of the failed create is free: " + res.body);
  assert.equal((await h.app.ctx.storage.list("uploads/")).length, 1);
});

test("while S3 or PostgreSQL is away, every create that stores a file answers 503 naming it and leaves nothing: separations, stem splits, voice conversions, voice model imports", async () => {
  const voice = await new VoiceModelRepository(h.prisma).create({
    title: "Public voice",
    architecture: "native",
    sampleRate: 40000,
    fileKey: "models:voices/native-aria.onnx",
  });
  const aria = await readFile(new URL("../../../models/voices/native-aria.onnx", import.meta.url));
  const wav = await audio("wav");
  const forms: Array<[string, ReturnType<typeof multipart>]> = [
    ["vocal-separations", multipart({}, [{ name: "inputFile", filename: "song.wav", content: wav }])],
    ["stem-splits", multipart({}, [{ name: "inputFile", filename: "song.wav", content: wav }])],
    ["voice-conversions", multipart({ voiceModelId: voice.id }, [{ name: "soundFile", filename: "voice.wav", content: wav }])],
    [
      "voice-models",
      multipart({ metadata: JSON.stringify({ title: "Aria copy" }) }, [
        { name: "modelFile", filename: "aria.onnx", content: aria },
      ]),
    ],
  ];
  const before = await footprint(h);
  const outages = [
    { service: h.stack.s3, message: /^object storage is unavailable/ },
    { service: h.stack.postgres, message: /^the database is unavailable/ },
  ];
  for (const { service, message } of outages) {
    await service.halt();
    try {
      for (const [path, form] of forms) {
        const res = await h.app.inject({
          method: "POST",
          url: `/api/kits/v1/${path}`,
          headers: { ...form.headers, ...auth },
          payload: form.payload,
        });
        assertUnavailable(res, message);
      }
    } finally {
      await service.resume();
    }
    assert.deepEqual(await footprint(h), before, "a row, object, queue entry or temp file was left");
  }
});
