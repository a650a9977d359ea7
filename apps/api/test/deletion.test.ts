import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { createJobTables, type MixdownJobTables } from "@mixdown/db";
import { jobOutputKeys, voiceModelKeys } from "@mixdown/storage";
import { audio, multipart, startHarness, type Harness } from "./helpers.ts";

let h: Harness;
let tables: MixdownJobTables;
type Caller = Awaited<ReturnType<Harness["newCaller"]>>;
let me: Caller;
let stranger: Caller;

before(async () => {
  h = await startHarness("s3");
  tables = createJobTables(h.prisma);
  me = await h.newCaller("me");
  stranger = await h.newCaller("stranger");
});
after(async () => {
  await h?.stack.s3.resume();
  await h?.stop();
});

const BASE = "/api/kits/v1";
const put = (key: string) => h.app.ctx.storage.putStream(key, Readable.from([Buffer.from(key)]));
const allObjects = () => h.app.ctx.storage.list("");

async function createSeparation(who: Caller, idempotencyKey?: string): Promise<number> {
  const form = multipart({}, [{ name: "inputFile", filename: "song.wav", content: await audio("wav") }]);
  const res = await h.app.inject({
    method: "POST",
    url: `${BASE}/vocal-separations`,
    headers: { ...form.headers, ...who.auth, ...(idempotencyKey ? { "idempotency-key": idempotencyKey } : {}) },
    payload: form.payload,
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().id;
}

async function createConversion(who: Caller, voiceModelId: number): Promise<number> {
  const form = multipart({ voiceModelId }, [{ name: "soundFile", filename: "take.wav", content: await audio("wav") }]);
  const res = await h.app.inject({
    method: "POST",
    url: `${BASE}/voice-conversions`,
    headers: { ...form.headers, ...who.auth },
    payload: form.payload,
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id;
}

async function createTts(who: Caller, voiceModelId: number): Promise<number> {
  const res = await h.app.inject({
    method: "POST",
    url: `${BASE}/tts`,
    headers: { ...who.auth, "content-type": "application/json" },
    payload: { voiceModelId, inputTtsText: "Forget me." },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id;
}

const del = (who: Caller, path: string) => h.app.inject({ method: "DELETE", url: `${BASE}/${path}`, headers: who.auth });

/** Ends a separation as its worker would: outputs stored under its prefix, the row `success`, a webhook owed. */
async function finishSeparation(id: number): Promise<string[]> {
  await h.prisma.separationJob.update({ where: { id }, data: { webhookUrl: "https://hooks.example/done" } });
  const out = jobOutputKeys("vocal-separation", id);
  const keys = [out.file("vocals.wav"), out.file("backing.wav"), out.file("vocals.mp3")];
  for (const key of keys) await put(key);
  const ended = await tables.separation.complete(id, {
    vocalKey: keys[0]!,
    backingKey: keys[1]!,
    lossyVocalKey: keys[2]!,
    stems: [],
    lossyStems: [],
    models: ["vocals"],
  });
  assert.ok(ended);
  return keys;
}

describe("DELETE of a job", () => {
  test("an ended separation: 204 with no body; its upload, outputs, row, idempotency key and owed webhook are gone; another caller's job is untouched", async () => {
    const mine = await createSeparation(me, "forget-me");
    const theirs = await createSeparation(stranger, "forget-me");
    const myRow = await h.prisma.separationJob.findUniqueOrThrow({ where: { id: mine } });
    const theirRow = await h.prisma.separationJob.findUniqueOrThrow({ where: { id: theirs } });
    const myOutputs = await finishSeparation(mine);
    const theirOutputs = await finishSeparation(theirs);
    assert.equal(await h.prisma.webhookDelivery.count({ where: { jobKind: "separation", rowId: mine } }), 1);
    const objectsBefore = await allObjects();
    for (const key of [myRow.inputKey, ...myOutputs]) assert.ok(objectsBefore.includes(key), key);

    const res = await del(me, `vocal-separations/${mine}`);
    assert.equal(res.statusCode, 204, res.body);
    assert.equal(res.body, "");

    const objectsAfter = await allObjects();
    assert.deepEqual(
      objectsAfter.sort(),
      objectsBefore.filter((k) => k !== myRow.inputKey && !k.startsWith(jobOutputKeys("vocal-separation", mine).prefix)).sort(),
      "exactly the job's upload and outputs went",
    );
    for (const key of [theirRow.inputKey, ...theirOutputs])
      assert.ok(objectsAfter.includes(key), `the other caller's ${key} stays`);
    assert.equal(await h.prisma.separationJob.count({ where: { id: mine } }), 0);
    assert.equal(await h.prisma.webhookDelivery.count({ where: { jobKind: "separation", rowId: mine } }), 0);
    assert.equal(await h.prisma.idempotencyKey.count({ where: { callerId: me.callerId, key: "forget-me" } }), 0);
    assert.equal(await h.prisma.pendingDeletion.count(), 0);
    // The other caller's row, webhook and key are all there.
    assert.equal(await h.prisma.separationJob.count({ where: { id: theirs } }), 1);
    assert.equal(await h.prisma.webhookDelivery.count({ where: { jobKind: "separation", rowId: theirs } }), 1);
    assert.equal(await h.prisma.idempotencyKey.count({ where: { callerId: stranger.callerId, key: "forget-me" } }), 1);

    assert.equal(
      (await h.app.inject({ method: "GET", url: `${BASE}/vocal-separations/${mine}`, headers: me.auth })).statusCode,
      404,
    );
    // The key is free again: the same create makes a new job.
    const again = await createSeparation(me, "forget-me");
    assert.notEqual(again, mine);
  });

  test("a second delete and someone else's job answer 404 and touch nothing; a stem split is not a vocal separation", async () => {
    const mine = await createSeparation(me);
    const theirs = await createSeparation(stranger);
    const before = await allObjects();
    const foreign = await del(me, `vocal-separations/${theirs}`);
    assert.equal(foreign.statusCode, 404);
    assert.deepEqual(foreign.json(), { statusCode: 404, error: "Not Found", message: `vocal separation ${theirs} not found` });
    assert.equal((await del(me, `stem-splits/${mine}`)).statusCode, 404, "the path's kind is checked");
    assert.deepEqual((await allObjects()).sort(), before.sort());
    assert.equal(await h.prisma.separationJob.count({ where: { id: { in: [mine, theirs] } } }), 2);

    assert.equal((await del(me, `vocal-separations/${mine}`)).statusCode, 204);
    const second = await del(me, `vocal-separations/${mine}`);
    assert.equal(second.statusCode, 404);
    assert.match(second.json().message, new RegExp(`vocal separation ${mine} not found`));
    assert.equal((await del(me, "vocal-separations/0")).statusCode, 404);
    assert.equal((await h.app.inject({ method: "DELETE", url: `${BASE}/vocal-separations/${theirs}` })).statusCode, 401);
  });

  test("a running (queued) job is cancelled, its queue entry removed, then deleted with its upload", async () => {
    const id = await createSeparation(me);
    const row = await h.prisma.separationJob.findUniqueOrThrow({ where: { id } });
    assert.equal(row.status, "running");
    assert.ok(await h.app.ctx.queues.queue("separation").getJob(`separation-${id}`));
    assert.equal((await del(me, `vocal-separations/${id}`)).statusCode, 204);
    assert.equal(await h.app.ctx.queues.queue("separation").getJob(`separation-${id}`), undefined);
    assert.equal(await h.prisma.separationJob.count({ where: { id } }), 0);
    assert.equal(await h.app.ctx.storage.exists(row.inputKey), false);
  });

  test("voice conversions and TTS: the take, the outputs and the row go; the voice model stays", async () => {
    const model = await h.createModel({ title: "Kept", ownerId: me.callerId });
    const conversion = await createConversion(me, model.id);
    const tts = await createTts(me, model.id);
    const convRow = await h.prisma.voiceConversionJob.findUniqueOrThrow({ where: { id: conversion } });
    const convOut = jobOutputKeys("voice-conversion", conversion).file("output.wav");
    const ttsOut = jobOutputKeys("tts", tts).file("output.wav");
    await put(convOut);
    await put(ttsOut);
    assert.ok(
      await tables["voice-conversion"].complete(conversion, { outputKey: convOut, lossyOutputKey: convOut, recombinedKey: null }),
    );
    assert.equal((await del(me, `voice-conversions/${conversion}`)).statusCode, 204);
    assert.equal((await del(me, `tts/${tts}`)).statusCode, 204, "a running TTS job");
    for (const key of [convRow.inputKey, convOut, ttsOut]) assert.equal(await h.app.ctx.storage.exists(key), false, key);
    assert.equal(await h.prisma.voiceConversionJob.count({ where: { id: conversion } }), 0);
    assert.equal(await h.prisma.ttsJob.count({ where: { id: tts } }), 0);
    assert.equal(await h.prisma.voiceModel.count({ where: { id: model.id } }), 1);
  });

  test("while S3 is away: 503 with Retry-After and the row kept; the deletion is finished by a retry, or by the sweep of pending deletions", async () => {
    const retried = await createSeparation(me);
    const swept = await createSeparation(me);
    const outputs = [...(await finishSeparation(retried)), ...(await finishSeparation(swept))];
    await h.stack.s3.halt();
    try {
      for (const id of [retried, swept]) {
        const res = await del(me, `vocal-separations/${id}`);
        assert.equal(res.statusCode, 503, res.body);
        assert.equal(res.headers["retry-after"], "5");
        assert.match(res.json().message, /^object storage is unavailable .*the deletion has begun/);
      }
      assert.equal(
        await h.prisma.separationJob.count({ where: { id: { in: [retried, swept] } } }),
        2,
        "rows stay while files may",
      );
      const pending = await h.prisma.pendingDeletion.findMany({ orderBy: { id: "asc" } });
      assert.deepEqual(
        pending.map((p) => [p.resourceKind, p.resourceId]),
        [
          ["separation", retried],
          ["separation", swept],
        ],
      );
      assert.ok(pending.every((p) => p.attempts >= 1 && /object storage is unavailable/.test(p.lastError ?? "")));
    } finally {
      await h.stack.s3.resume();
    }
    assert.equal((await del(me, `vocal-separations/${retried}`)).statusCode, 204, "a retry finishes it");
    assert.equal(await h.app.ctx.deletions.finishPending(new Date(Date.now() + 1000)), 1, "the sweep finishes the other");
    assert.equal(await h.prisma.separationJob.count({ where: { id: { in: [retried, swept] } } }), 0);
    assert.equal(await h.prisma.pendingDeletion.count(), 0);
    const left = await allObjects();
    for (const key of outputs) assert.ok(!left.includes(key), key);
  });

  test("a deletion cut short after its files went (the process killed) is finished by the sweep: no object of a gone row is left", async () => {
    const id = await createSeparation(me);
    const row = await h.prisma.separationJob.findUniqueOrThrow({ where: { id } });
    const outputs = await finishSeparation(id);
    // As step 2 left it, then the process died: the record, the files still there, the row too.
    await h.prisma.pendingDeletion.create({
      data: {
        resourceKind: "separation",
        resourceId: id,
        keys: [row.inputKey],
        prefixes: [jobOutputKeys("vocal-separation", id).prefix],
      },
    });
    // And one whose row is already gone while an object of it was left.
    const orphan = jobOutputKeys("tts", 999_999).file("output.wav");
    await put(orphan);
    await h.prisma.pendingDeletion.create({
      data: { resourceKind: "tts", resourceId: 999_999, prefixes: [jobOutputKeys("tts", 999_999).prefix] },
    });
    assert.equal(await h.app.ctx.deletions.finishPending(new Date(Date.now() + 1000)), 2);
    const left = await allObjects();
    for (const key of [row.inputKey, ...outputs, orphan]) assert.ok(!left.includes(key), key);
    assert.equal(await h.prisma.separationJob.count({ where: { id } }), 0);
    assert.equal(await h.prisma.pendingDeletion.count(), 0);
  });
});

describe("DELETE of a voice model", () => {
  test("the caller's own: its files, its ended jobs with their files and its row go; public and others' models are 404", async () => {
    const publicModel = await h.createModel({ title: "Public" });
    const theirs = await h.createModel({ title: "Theirs", ownerId: stranger.callerId });
    const model = await h.createModel({ title: "Mine", ownerId: me.callerId });
    const files = voiceModelKeys(model.id);
    await put(files.model);
    await put(files.cover);
    const reference = "uploads/voice-models/reference-of-mine.wav";
    await put(reference);
    await h.prisma.voiceModel.update({
      where: { id: model.id },
      data: { fileKey: files.model, imageKey: files.cover, referenceKey: reference },
    });
    // A neighbour whose id starts with the same digits keeps its files.
    const neighbour = voiceModelKeys(Number(`${model.id}0`)).model;
    await put(neighbour);

    const conversion = await createConversion(me, model.id);
    const convRow = await h.prisma.voiceConversionJob.findUniqueOrThrow({ where: { id: conversion } });

    for (const id of [publicModel.id, theirs.id]) {
      const res = await del(me, `voice-models/${id}`);
      assert.equal(res.statusCode, 404);
      assert.equal(res.json().message, `voice model ${id} not found`);
    }
    const busy = await del(me, `voice-models/${model.id}`);
    assert.equal(busy.statusCode, 409);
    assert.match(busy.json().message, new RegExp(`used by running jobs \\(voice-conversion ${conversion}\\)`));
    assert.equal(await h.app.ctx.storage.exists(files.model), true, "nothing deleted while in use");

    assert.ok(await tables["voice-conversion"].fail(conversion, "done"));
    const res = await del(me, `voice-models/${model.id}`);
    assert.equal(res.statusCode, 204, res.body);
    for (const key of [files.model, files.cover, reference, convRow.inputKey]) {
      assert.equal(await h.app.ctx.storage.exists(key), false, key);
    }
    assert.equal(await h.app.ctx.storage.exists(neighbour), true);
    assert.equal(await h.prisma.voiceModel.count({ where: { id: model.id } }), 0);
    assert.equal(await h.prisma.voiceConversionJob.count({ where: { id: conversion } }), 0);
    assert.equal(await h.prisma.voiceModel.count({ where: { id: { in: [publicModel.id, theirs.id] } } }), 2);
    assert.equal((await del(me, `voice-models/${model.id}`)).statusCode, 404);
  });

  test("a blend's output model and the blend job go together, from either side; a running blend is cancelled first", async () => {
    const a = await h.createModel({ title: "A", ownerId: me.callerId });
    const b = await h.createModel({ title: "B", ownerId: me.callerId });
    const blend = async () => {
      const res = await h.app.inject({
        method: "POST",
        url: `${BASE}/voice-blender`,
        headers: { ...me.auth, "content-type": "application/json" },
        payload: { modelId1: a.id, modelId2: b.id, alpha: 0.5 },
      });
      assert.equal(res.statusCode, 201, res.body);
      return res.json() as { id: number; outputModelId: number };
    };
    const first = await blend();
    await put(voiceModelKeys(first.outputModelId).model);
    assert.equal((await del(me, `voice-blender/${first.id}`)).statusCode, 204, "a running blend");
    assert.equal(await h.prisma.voiceBlendJob.count({ where: { id: first.id } }), 0);
    assert.equal(await h.prisma.voiceModel.count({ where: { id: first.outputModelId } }), 0);
    assert.equal(await h.app.ctx.storage.exists(voiceModelKeys(first.outputModelId).model), false);

    const second = await blend();
    assert.equal((await del(me, `voice-models/${second.outputModelId}`)).statusCode, 204);
    assert.equal(await h.prisma.voiceBlendJob.count({ where: { id: second.id } }), 0);
    assert.equal(await h.prisma.voiceModel.count({ where: { id: { in: [a.id, b.id] } } }), 2, "the inputs stay");
  });
});
