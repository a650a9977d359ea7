import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { bullJobId } from "@mixdown/queue";
import { assertUnchanged, audio, footprint, multipart, sortedKeys, startHarness, TIMESTAMP, type Harness } from "./helpers.ts";

let h: Harness;
before(async () => {
  // no vocal separation model on this server: isolateVocal is refused at create (the worker's tests run one)
  h = await startHarness("s3", { MAX_SEPARATION_UPLOAD_BYTES: String(64 * 1024), SEPARATION_MODEL_VOCALS: "none" });
});
after(async () => {
  await h?.stop();
});

const RECORD_KEYS = [
  "createdAt",
  "direction",
  "errorMessage",
  "harmonyFileUrl",
  "id",
  "inputFileName",
  "inputFileUrl",
  "interval",
  "isolateVocal",
  "jobEndTime",
  "jobStartTime",
  "key",
  "keyConfidence",
  "keySource",
  "lossyHarmonyFileUrl",
  "lossyMixFileUrl",
  "mixFileUrl",
  "models",
  "notes",
  "outputsExpireAt",
  "outputsExpiredAt",
  "progress",
  "status",
  "type",
];

async function create(auth: Record<string, string>, fields: Record<string, string>, content?: Buffer, filename = "lead.wav") {
  const form = multipart(fields, content ? [{ name: "inputFile", filename, content }] : []);
  return h.app.inject({
    method: "POST",
    url: "/api/kits/v1/harmonies",
    headers: { ...form.headers, ...auth },
    payload: form.payload,
  });
}

describe("harmonies", () => {
  test("a create answers 200 with a running record naming the key given; stores the upload, writes the row, queues the job", async () => {
    const caller = await h.newCaller();
    const res = await create(
      caller.auth,
      { key: "f# MAJOR", interval: "sixth", direction: "below" },
      await audio("mp3"),
      "my lead.mp3",
    );
    assert.equal(res.statusCode, 200, res.body);
    const record = res.json();
    assert.deepEqual(sortedKeys(record), RECORD_KEYS);
    assert.equal(record.type, "harmony");
    assert.equal(record.status, "running");
    assert.equal(record.key, "F# major", "the key as the records spell it");
    assert.equal(record.keySource, "given");
    assert.equal(record.keyConfidence, null);
    assert.equal(record.interval, "sixth");
    assert.equal(record.direction, "below");
    assert.equal(record.isolateVocal, false);
    assert.equal(record.notes, null);
    assert.equal(record.harmonyFileUrl, null);
    assert.equal(record.mixFileUrl, null);
    assert.match(record.inputFileUrl, /^http/);
    assert.equal(record.inputFileName, "my lead.mp3");
    assert.match(record.createdAt, TIMESTAMP);

    const row = await h.prisma.harmonyJob.findUnique({ where: { id: record.id } });
    assert.equal(row?.callerId, caller.callerId);
    assert.equal(row?.requestedKey, "F# major");
    assert.match(row!.inputKey, /^uploads\/harmony\/[0-9a-f-]{36}\.mp3$/);
    assert.equal(await h.app.ctx.storage.exists(row!.inputKey), true);
    assert.notEqual(row?.enqueuedAt, null);
    const job = await h.app.ctx.queues.queue("harmony").getJob(bullJobId("harmony", record.id));
    assert.deepEqual(job?.data, { jobId: record.id });

    const fetched = await h.app.inject({ method: "GET", url: `/api/kits/v1/harmonies/${record.id}`, headers: caller.auth });
    assert.equal(fetched.statusCode, 200);
    // the upload's URL is signed again at each read
    assert.deepEqual({ ...(fetched.json() as object), inputFileUrl: null }, { ...record, inputFileUrl: null });
  });

  test("without key, interval or direction: the key is left to the worker, a third above", async () => {
    const caller = await h.newCaller();
    const res = await create(caller.auth, { key: " " }, await audio("wav"));
    assert.equal(res.statusCode, 200, res.body);
    const record = res.json();
    assert.equal(record.key, null);
    assert.equal(record.keySource, null);
    assert.equal(record.interval, "third");
    assert.equal(record.direction, "above");
    assert.equal((await h.prisma.harmonyJob.findUnique({ where: { id: record.id } }))?.requestedKey, null);
  });

  test("list pages the caller's own harmonies only; another caller gets 404; cancel, then delete removes the row and its upload", async () => {
    const a = await h.newCaller();
    const b = await h.newCaller();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await create(a.auth, { key: "A minor" }, await audio("wav"))).json().id);
    const page = await h.app.inject({ method: "GET", url: "/api/kits/v1/harmonies?perPage=2&page=2", headers: a.auth });
    assert.equal(page.statusCode, 200, page.body);
    assert.equal(page.json().meta.total, 3);
    assert.deepEqual(
      page.json().data.map((r: { id: number }) => r.id),
      [ids[2]],
    );
    assert.equal((await h.app.inject({ method: "GET", url: "/api/kits/v1/harmonies", headers: b.auth })).json().meta.total, 0);
    const other = await h.app.inject({ method: "GET", url: `/api/kits/v1/harmonies/${ids[0]}`, headers: b.auth });
    assert.equal(other.statusCode, 404);
    assert.match(other.json().message, /harmony/);

    const cancelled = await h.app.inject({ method: "POST", url: `/api/kits/v1/harmonies/${ids[0]}/cancel`, headers: a.auth });
    assert.equal(cancelled.statusCode, 200, cancelled.body);
    assert.equal(cancelled.json().status, "cancelled");
    const row = await h.prisma.harmonyJob.findUnique({ where: { id: ids[0] } });
    const deleted = await h.app.inject({ method: "DELETE", url: `/api/kits/v1/harmonies/${ids[0]}`, headers: a.auth });
    assert.equal(deleted.statusCode, 204, deleted.body);
    assert.equal(await h.prisma.harmonyJob.findUnique({ where: { id: ids[0] } }), null);
    assert.equal(await h.app.ctx.storage.exists(row!.inputKey), false);
  });

  describe("bad input is refused with a 4xx naming the problem, leaving nothing behind", () => {
    const cases: Array<[string, Record<string, string>, () => Promise<Buffer | undefined>, number, RegExp]> = [
      [
        "a key that is no key",
        { key: "H dorian" },
        () => audio("wav"),
        422,
        /key must be a tonic and major or minor.*\(got "H dorian"\)/,
      ],
      ["a key without its scale", { key: "A" }, () => audio("wav"), 422, /key must be a tonic and major or minor/],
      [
        "an unknown interval",
        { interval: "fifth" },
        () => audio("wav"),
        422,
        /interval must be one of third, sixth \(got "fifth"\)/,
      ],
      ["an unknown direction", { direction: "sideways" }, () => audio("wav"), 422, /direction must be one of above, below/],
      [
        "isolateVocal on a server without the vocal separation model",
        { isolateVocal: "true" },
        () => audio("wav"),
        422,
        /isolateVocal cannot run on this server \(SEPARATION_MODEL_VOCALS\)/,
      ],
      ["isolateVocal that is not a boolean", { isolateVocal: "maybe" }, () => audio("wav"), 422, /isolateVocal/],
      ["no inputFile part", { key: "A minor" }, async () => undefined, 422, /inputFile is required/],
      ["bytes that are not audio", {}, async () => Buffer.from("not audio at all, only text".repeat(20)), 415, /./],
      ["a file over MAX_SEPARATION_UPLOAD_BYTES", {}, async () => Buffer.alloc(80 * 1024, 1), 413, /./],
    ];
    for (const [name, fields, make, status, message] of cases) {
      test(name, async () => {
        const caller = await h.newCaller();
        const content = await make();
        const before = await footprint(h);
        const res = await create(caller.auth, fields, content);
        assert.equal(res.statusCode, status, res.body);
        assert.deepEqual(sortedKeys(res.json()), ["error", "message", "statusCode"]);
        assert.match(res.json().message, message);
        await assertUnchanged(h, before);
      });
    }
  });
});
