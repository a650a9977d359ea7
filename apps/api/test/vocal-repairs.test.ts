import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { bullJobId } from "@mixdown/queue";
import { assertUnchanged, audio, footprint, multipart, sortedKeys, startHarness, TIMESTAMP, type Harness } from "./helpers.ts";

let h: Harness;
before(async () => {
  // no vocal split on this server: a dereverb is refused at create (the worker's tests run one)
  h = await startHarness("s3", { MAX_SEPARATION_UPLOAD_BYTES: String(64 * 1024), SEPARATION_MODEL_VOCAL_SPLIT: "none" });
});
after(async () => {
  await h?.stop();
});

const RECORD_KEYS = [
  "createdAt",
  "errorMessage",
  "id",
  "inputFileName",
  "isolateVocal",
  "jobEndTime",
  "jobStartTime",
  "lossyOutputFileUrl",
  "models",
  "outputFileUrl",
  "outputsExpireAt",
  "outputsExpiredAt",
  "progress",
  "status",
  "steps",
  "type",
];

async function create(
  auth: Record<string, string>,
  fields: Record<string, string | number>,
  content?: Buffer,
  filename = "take.wav",
) {
  const form = multipart(fields, content ? [{ name: "inputFile", filename, content }] : []);
  return h.app.inject({
    method: "POST",
    url: "/api/kits/v1/vocal-repairs",
    headers: { ...form.headers, ...auth },
    payload: form.payload,
  });
}

describe("vocal repairs", () => {
  test("a create answers 200 with a running record, its steps in their fixed order; stores the upload, writes the row, queues the job", async () => {
    const caller = await h.newCaller();
    const res = await create(caller.auth, { steps: " denoise " }, await audio("mp3"), "my take.mp3");
    assert.equal(res.statusCode, 200, res.body);
    const record = res.json();
    assert.deepEqual(sortedKeys(record), RECORD_KEYS);
    assert.equal(record.type, "repair");
    assert.equal(record.status, "running");
    assert.deepEqual(record.steps, ["denoise"]);
    assert.equal(record.isolateVocal, false);
    assert.deepEqual(record.models, []);
    assert.equal(record.outputFileUrl, null);
    assert.equal(record.inputFileName, "my take.mp3");
    assert.match(record.createdAt, TIMESTAMP);

    const row = await h.prisma.vocalRepairJob.findUnique({ where: { id: record.id } });
    assert.equal(row?.callerId, caller.callerId);
    assert.equal(row?.inputFormat, "mp3");
    assert.match(row!.inputKey, /^uploads\/vocal-repair\/[0-9a-f-]{36}\.mp3$/);
    assert.equal(await h.app.ctx.storage.exists(row!.inputKey), true);
    assert.notEqual(row?.enqueuedAt, null);
    const job = await h.app.ctx.queues.queue("vocal-repair").getJob(bullJobId("vocal-repair", record.id));
    assert.deepEqual(job?.data, { jobId: record.id });

    const fetched = await h.app.inject({ method: "GET", url: `/api/kits/v1/vocal-repairs/${record.id}`, headers: caller.auth });
    assert.equal(fetched.statusCode, 200);
    assert.deepEqual(fetched.json(), record);
  });

  test("isolateVocal=true is stored; repeated steps count once", async () => {
    const caller = await h.newCaller();
    const res = await create(caller.auth, { steps: "denoise,denoise", isolateVocal: "true" }, await audio("wav"));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().isolateVocal, true);
    assert.deepEqual(res.json().steps, ["denoise"]);
  });

  test("list pages the caller's own repairs only; another caller gets 404", async () => {
    const a = await h.newCaller();
    const b = await h.newCaller();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await create(a.auth, { steps: "denoise" }, await audio("wav"))).json().id);
    const page = await h.app.inject({ method: "GET", url: "/api/kits/v1/vocal-repairs?perPage=2&page=2", headers: a.auth });
    assert.equal(page.statusCode, 200, page.body);
    assert.equal(page.json().meta.total, 3);
    assert.deepEqual(
      page.json().data.map((r: { id: number }) => r.id),
      [ids[2]],
    );
    const none = await h.app.inject({ method: "GET", url: "/api/kits/v1/vocal-repairs", headers: b.auth });
    assert.equal(none.json().meta.total, 0);
    const other = await h.app.inject({ method: "GET", url: `/api/kits/v1/vocal-repairs/${ids[0]}`, headers: b.auth });
    assert.equal(other.statusCode, 404);
    assert.match(other.json().message, /vocal repair/);
  });

  test("cancel ends a running repair `cancelled`; delete removes the row and its upload", async () => {
    const caller = await h.newCaller();
    const { id } = (await create(caller.auth, { steps: "denoise" }, await audio("flac"))).json();
    const cancelled = await h.app.inject({
      method: "POST",
      url: `/api/kits/v1/vocal-repairs/${id}/cancel`,
      headers: caller.auth,
    });
    assert.equal(cancelled.statusCode, 200, cancelled.body);
    assert.equal(cancelled.json().status, "cancelled");
    const row = await h.prisma.vocalRepairJob.findUnique({ where: { id } });
    const deleted = await h.app.inject({ method: "DELETE", url: `/api/kits/v1/vocal-repairs/${id}`, headers: caller.auth });
    assert.equal(deleted.statusCode, 204, deleted.body);
    assert.equal(await h.prisma.vocalRepairJob.findUnique({ where: { id } }), null);
    assert.equal(await h.app.ctx.storage.exists(row!.inputKey), false);
  });

  describe("bad input is refused with a 4xx naming the problem, leaving nothing behind", () => {
    const cases: Array<[string, Record<string, string>, () => Promise<Buffer | undefined>, number, RegExp]> = [
      ["no steps field", {}, () => audio("wav"), 422, /steps is required: one or more of dereverb, denoise/],
      ["an empty steps field", { steps: "" }, () => audio("wav"), 422, /steps is empty: name one or more of dereverb, denoise/],
      ["steps of commas only", { steps: " , ," }, () => audio("wav"), 422, /steps is empty/],
      [
        "unknown steps, named",
        { steps: "denoise,declip,de-ess" },
        () => audio("wav"),
        422,
        /steps names "declip", "de-ess", not a repair step \(one or more of dereverb, denoise/,
      ],
      [
        "dereverb on a server without the vocal split model",
        { steps: "dereverb" },
        () => audio("wav"),
        422,
        /dereverb cannot run on this server: SEPARATION_MODEL_VOCAL_SPLIT=none/,
      ],
      [
        "isolateVocal that is not a boolean",
        { steps: "denoise", isolateVocal: "maybe" },
        () => audio("wav"),
        422,
        /isolateVocal/,
      ],
      ["no inputFile part", { steps: "denoise" }, async () => undefined, 422, /inputFile is required/],
      [
        "bytes that are not audio",
        { steps: "denoise" },
        async () => Buffer.from("not audio at all, only text".repeat(20)),
        415,
        /./,
      ],
      ["a file over MAX_SEPARATION_UPLOAD_BYTES", { steps: "denoise" }, async () => Buffer.alloc(80 * 1024, 1), 413, /./],
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
