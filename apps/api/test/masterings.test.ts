import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { bullJobId } from "@mixdown/queue";
import { assertUnchanged, audio, footprint, multipart, sortedKeys, startHarness, TIMESTAMP, type Harness } from "./helpers.ts";

let h: Harness;
before(async () => {
  h = await startHarness("s3", { MAX_SEPARATION_UPLOAD_BYTES: String(64 * 1024) });
});
after(async () => {
  await h?.stop();
});

const RECORD_KEYS = [
  "createdAt",
  "errorMessage",
  "id",
  "inputFileName",
  "inputFileUrl",
  "jobEndTime",
  "jobStartTime",
  "lossyOutputFileUrl",
  "loudnessAfter",
  "loudnessBefore",
  "mode",
  "output16BitFileUrl",
  "outputFileUrl",
  "outputsExpireAt",
  "outputsExpiredAt",
  "processor",
  "progress",
  "referenceFileName",
  "status",
  "targetLufs",
  "truePeakDb",
  "type",
];

interface Part {
  name: string;
  filename: string;
  content: Buffer;
}

async function create(auth: Record<string, string>, fields: Record<string, string | number>, files: Part[]) {
  const form = multipart(fields, files);
  return h.app.inject({
    method: "POST",
    url: "/api/kits/v1/masterings",
    headers: { ...form.headers, ...auth },
    payload: form.payload,
  });
}

const target = async (filename = "song.wav"): Promise<Part> => ({ name: "targetFile", filename, content: await audio("wav") });
const reference = async (filename = "reference.mp3"): Promise<Part> => ({
  name: "referenceFile",
  filename,
  content: await audio("mp3"),
});

describe("masterings", () => {
  test("a reference mastering answers 201 with a running record, stores both uploads, writes the row and queues the job", async () => {
    const caller = await h.newCaller();
    const res = await create(caller.auth, {}, [await target("my song.wav"), await reference("the ref.mp3")]);
    assert.equal(res.statusCode, 201, res.body);
    const record = res.json();
    assert.deepEqual(sortedKeys(record), RECORD_KEYS);
    assert.equal(record.type, "master");
    assert.equal(record.mode, "reference");
    assert.equal(record.status, "running");
    assert.equal(record.inputFileName, "my song.wav");
    assert.equal(record.referenceFileName, "the ref.mp3");
    assert.equal(record.targetLufs, null);
    assert.equal(record.outputFileUrl, null);
    assert.equal(record.loudnessBefore, null);
    assert.match(record.inputFileUrl, /^http/);
    assert.match(record.createdAt, TIMESTAMP);

    const row = await h.prisma.masteringJob.findUnique({ where: { id: record.id } });
    assert.equal(row?.callerId, caller.callerId);
    assert.match(row!.inputKey, /^uploads\/mastering\/[0-9a-f-]{36}\.wav$/);
    assert.match(row!.referenceKey!, /^uploads\/mastering\/[0-9a-f-]{36}\.mp3$/);
    assert.equal(await h.app.ctx.storage.exists(row!.inputKey), true);
    assert.equal(await h.app.ctx.storage.exists(row!.referenceKey!), true);
    assert.notEqual(row?.enqueuedAt, null);
    const job = await h.app.ctx.queues.queue("mastering").getJob(bullJobId("mastering", record.id));
    assert.deepEqual(job?.data, { jobId: record.id });

    const fetched = await h.app.inject({ method: "GET", url: `/api/kits/v1/masterings/${record.id}`, headers: caller.auth });
    assert.equal(fetched.statusCode, 200);
    // the URLs are signed afresh at each read
    assert.deepEqual({ ...(fetched.json() as object), inputFileUrl: null }, { ...(record as object), inputFileUrl: null });
  });

  test("a loudness mastering takes the target given and the other's default (-14 LUFS, -1 dBTP)", async () => {
    const caller = await h.newCaller();
    const only = await create(caller.auth, { targetLufs: -16 }, [await target()]);
    assert.equal(only.statusCode, 201, only.body);
    assert.deepEqual([only.json().mode, only.json().targetLufs, only.json().truePeakDb], ["loudness", -16, -1]);
    const peak = await create(caller.auth, { truePeakDb: -2 }, [await target()]);
    assert.deepEqual([peak.json().targetLufs, peak.json().truePeakDb], [-14, -2]);
    const row = await h.prisma.masteringJob.findUnique({ where: { id: peak.json().id } });
    assert.equal(row?.referenceKey, null);
  });

  test("a succeeded row presents its outputs as signed URLs and its loudness as stored", async () => {
    const caller = await h.newCaller();
    const { id } = (await create(caller.auth, { targetLufs: -14 }, [await target()])).json();
    const loudnessBefore = { integratedLufs: -20.3, loudnessRangeLu: 5.1, truePeakDbtp: -6.2 };
    const loudnessAfter = { integratedLufs: -14, loudnessRangeLu: 5.1, truePeakDbtp: -1.1 };
    await h.prisma.masteringJob.update({
      where: { id },
      data: {
        status: "success",
        progress: 100,
        outputKey: `outputs/mastering/${id}/master.wav`,
        output16BitKey: `outputs/mastering/${id}/master-16bit.wav`,
        lossyOutputKey: `outputs/mastering/${id}/master.mp3`,
        loudnessBefore,
        loudnessAfter,
        processor: "ffmpeg loudnorm linear",
        jobEndTime: new Date(),
      },
    });
    const record = (await h.app.inject({ method: "GET", url: `/api/kits/v1/masterings/${id}`, headers: caller.auth })).json();
    assert.match(record.outputFileUrl, /master\.wav/);
    assert.match(record.output16BitFileUrl, /master-16bit\.wav/);
    assert.match(record.lossyOutputFileUrl, /master\.mp3/);
    assert.deepEqual(
      [record.loudnessBefore, record.loudnessAfter, record.processor],
      [loudnessBefore, loudnessAfter, "ffmpeg loudnorm linear"],
    );
  });

  test("list pages the caller's own masterings only; another caller gets 404; cancel, then delete removes the row and both uploads", async () => {
    const a = await h.newCaller();
    const b = await h.newCaller();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await create(a.auth, {}, [await target(), await reference()])).json().id);
    const page = await h.app.inject({ method: "GET", url: "/api/kits/v1/masterings?perPage=2&page=2", headers: a.auth });
    assert.equal(page.statusCode, 200, page.body);
    assert.equal(page.json().meta.total, 3);
    assert.deepEqual(
      page.json().data.map((r: { id: number }) => r.id),
      [ids[2]],
    );
    assert.equal((await h.app.inject({ method: "GET", url: "/api/kits/v1/masterings", headers: b.auth })).json().meta.total, 0);
    const other = await h.app.inject({ method: "GET", url: `/api/kits/v1/masterings/${ids[0]}`, headers: b.auth });
    assert.equal(other.statusCode, 404);
    assert.match(other.json().message, /mastering/);

    const cancelled = await h.app.inject({ method: "POST", url: `/api/kits/v1/masterings/${ids[0]}/cancel`, headers: a.auth });
    assert.equal(cancelled.statusCode, 200, cancelled.body);
    assert.equal(cancelled.json().status, "cancelled");
    const row = await h.prisma.masteringJob.findUnique({ where: { id: ids[0] } });
    const deleted = await h.app.inject({ method: "DELETE", url: `/api/kits/v1/masterings/${ids[0]}`, headers: a.auth });
    assert.equal(deleted.statusCode, 204, deleted.body);
    assert.equal(await h.prisma.masteringJob.findUnique({ where: { id: ids[0] } }), null);
    assert.equal(await h.app.ctx.storage.exists(row!.inputKey), false);
    assert.equal(await h.app.ctx.storage.exists(row!.referenceKey!), false);
  });

  describe("bad input is refused with a 4xx naming the problem, leaving nothing behind", () => {
    const notAudio = { name: "referenceFile", filename: "r.wav", content: Buffer.from("not audio at all, only text".repeat(20)) };
    const cases: Array<[string, () => Promise<{ fields: Record<string, string | number>; files: Part[] }>, number, RegExp]> = [
      [
        "neither a reference nor a loudness target",
        async () => ({ fields: {}, files: [await target()] }),
        422,
        /give referenceFile .* or targetLufs/,
      ],
      [
        "a reference and a loudness target together",
        async () => ({ fields: { targetLufs: -14 }, files: [await target(), await reference()] }),
        422,
        /not both/,
      ],
      ["no targetFile part", async () => ({ fields: { targetLufs: -14 }, files: [] }), 422, /targetFile is required/],
      [
        "targetLufs above -5",
        async () => ({ fields: { targetLufs: -3 }, files: [await target()] }),
        422,
        /targetLufs must be between -70 and -5 \(got -3\)/,
      ],
      [
        "targetLufs not a number",
        async () => ({ fields: { targetLufs: "loud" }, files: [await target()] }),
        422,
        /targetLufs must be a number/,
      ],
      [
        "truePeakDb above 0",
        async () => ({ fields: { truePeakDb: 1 }, files: [await target()] }),
        422,
        /truePeakDb must be between -9 and 0 \(got 1\)/,
      ],
      [
        "a reference that is not audio",
        async () => ({ fields: {}, files: [await target(), notAudio] }),
        415,
        /referenceFile must be/,
      ],
      [
        "a reference over MAX_SEPARATION_UPLOAD_BYTES",
        async () => ({ fields: {}, files: [await target(), { ...notAudio, content: Buffer.alloc(80 * 1024, 1) }] }),
        413,
        /./,
      ],
    ];
    for (const [name, make, status, message] of cases) {
      test(name, async () => {
        const caller = await h.newCaller();
        const { fields, files } = await make();
        const before = await footprint(h);
        const res = await create(caller.auth, fields, files);
        assert.equal(res.statusCode, status, res.body);
        assert.deepEqual(sortedKeys(res.json()), ["error", "message", "statusCode"]);
        assert.match(res.json().message, message);
        await assertUnchanged(h, before);
      });
    }
  });
});
