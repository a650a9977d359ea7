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
  "analysis",
  "analyzer",
  "createdAt",
  "errorMessage",
  "id",
  "inputFileName",
  "jobEndTime",
  "jobStartTime",
  "progress",
  "status",
  "type",
];

async function upload(auth: Record<string, string>, content: Buffer, filename = "song.wav", field = "inputFile") {
  const form = multipart({}, [{ name: field, filename, content }]);
  return h.app.inject({
    method: "POST",
    url: "/api/kits/v1/audio-analyses",
    headers: { ...form.headers, ...auth },
    payload: form.payload,
  });
}

describe("audio analyses", () => {
  test("a create answers 200 with a running record, stores the upload, writes the row and queues the job", async () => {
    const caller = await h.newCaller();
    const res = await upload(caller.auth, await audio("mp3"), "my song.mp3");
    assert.equal(res.statusCode, 200, res.body);
    const record = res.json();
    assert.deepEqual(sortedKeys(record), RECORD_KEYS);
    assert.equal(record.type, "analyze");
    assert.equal(record.status, "running");
    assert.equal(record.analysis, null);
    assert.equal(record.analyzer, null);
    assert.equal(record.inputFileName, "my song.mp3");
    assert.match(record.createdAt, TIMESTAMP);

    const row = await h.prisma.audioAnalysisJob.findUnique({ where: { id: record.id } });
    assert.equal(row?.callerId, caller.callerId);
    assert.equal(row?.inputFormat, "mp3");
    assert.match(row!.inputKey, /^uploads\/audio-analysis\/[0-9a-f-]{36}\.mp3$/);
    assert.equal(await h.app.ctx.storage.exists(row!.inputKey), true);
    assert.notEqual(row?.enqueuedAt, null);
    const job = await h.app.ctx.queues.queue("audio-analysis").getJob(bullJobId("audio-analysis", record.id));
    assert.deepEqual(job?.data, { jobId: record.id });

    const fetched = await h.app.inject({ method: "GET", url: `/api/kits/v1/audio-analyses/${record.id}`, headers: caller.auth });
    assert.equal(fetched.statusCode, 200);
    assert.deepEqual(fetched.json(), record);
  });

  test("a succeeded row presents its analysis as stored", async () => {
    const caller = await h.newCaller();
    const { id } = (await upload(caller.auth, await audio("wav"))).json();
    const analysis = {
      durationSeconds: 0.5,
      key: { key: "F#", scale: "minor", confidence: 0.71 },
      tempo: { bpm: 128.1, confidence: 3.9, beats: [0.12, 0.59] },
      loudness: { integratedLufs: -9.4, loudnessRangeLu: 4.2, truePeakDbtp: -0.3 },
    };
    await h.prisma.audioAnalysisJob.update({
      where: { id },
      data: {
        status: "success",
        progress: 100,
        analysis,
        analyzer: "essentia.js 2.1-beta6-dev; ffmpeg ebur128",
        jobEndTime: new Date(),
      },
    });
    const res = await h.app.inject({ method: "GET", url: `/api/kits/v1/audio-analyses/${id}`, headers: caller.auth });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json().analysis, analysis);
    assert.equal(res.json().status, "success");
  });

  test("list pages the caller's own analyses only; another caller gets 404", async () => {
    const a = await h.newCaller();
    const b = await h.newCaller();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await upload(a.auth, await audio("wav"))).json().id);
    const page = await h.app.inject({ method: "GET", url: "/api/kits/v1/audio-analyses?perPage=2&page=2", headers: a.auth });
    assert.equal(page.statusCode, 200, page.body);
    assert.equal(page.json().meta.total, 3);
    assert.deepEqual(
      page.json().data.map((r: { id: number }) => r.id),
      [ids[2]],
    );
    const none = await h.app.inject({ method: "GET", url: "/api/kits/v1/audio-analyses", headers: b.auth });
    assert.equal(none.json().meta.total, 0);
    const other = await h.app.inject({ method: "GET", url: `/api/kits/v1/audio-analyses/${ids[0]}`, headers: b.auth });
    assert.equal(other.statusCode, 404);
    assert.match(other.json().message, /audio analysis/);
  });

  test("cancel ends a running analysis `cancelled`; delete removes the row and its upload", async () => {
    const caller = await h.newCaller();
    const { id } = (await upload(caller.auth, await audio("flac"))).json();
    const cancelled = await h.app.inject({
      method: "POST",
      url: `/api/kits/v1/audio-analyses/${id}/cancel`,
      headers: caller.auth,
    });
    assert.equal(cancelled.statusCode, 200, cancelled.body);
    assert.equal(cancelled.json().status, "cancelled");
    const row = await h.prisma.audioAnalysisJob.findUnique({ where: { id } });
    const deleted = await h.app.inject({ method: "DELETE", url: `/api/kits/v1/audio-analyses/${id}`, headers: caller.auth });
    assert.equal(deleted.statusCode, 204, deleted.body);
    assert.equal(await h.prisma.audioAnalysisJob.findUnique({ where: { id } }), null);
    assert.equal(await h.app.ctx.storage.exists(row!.inputKey), false);
    const again = await h.app.inject({ method: "GET", url: `/api/kits/v1/audio-analyses/${id}`, headers: caller.auth });
    assert.equal(again.statusCode, 404);
  });

  describe("bad input is refused with a 4xx naming the problem, leaving nothing behind", () => {
    const cases: Array<[string, () => Promise<{ content: Buffer; field?: string }>, number, RegExp]> = [
      ["no inputFile part", async () => ({ content: await audio("wav"), field: "soundFile" }), 422, /inputFile is required/],
      ["bytes that are not audio", async () => ({ content: Buffer.from("not audio at all, only text".repeat(20)) }), 415, /./],
      ["an ogg/vorbis file (not a format it takes)", async () => ({ content: await audio("ogg") }), 415, /./],
      ["a file over MAX_SEPARATION_UPLOAD_BYTES", async () => ({ content: Buffer.alloc(80 * 1024, 1) }), 413, /./],
    ];
    for (const [name, make, status, message] of cases) {
      test(name, async () => {
        const caller = await h.newCaller();
        const { content, field } = await make();
        const before = await footprint(h);
        const res = await upload(caller.auth, content, "x.wav", field);
        assert.equal(res.statusCode, status, res.body);
        assert.deepEqual(sortedKeys(res.json()), ["error", "message", "statusCode"]);
        assert.match(res.json().message, message);
        await assertUnchanged(h, before);
      });
    }
  });

  describe("analyze on separations", () => {
    test("analyze=true is stored on the row and the record has `analysis: null` while it runs; absent: no key, as today", async () => {
      const caller = await h.newCaller();
      const send = (fields: Record<string, string>) => {
        return (async () => {
          const form = multipart(fields, [{ name: "inputFile", filename: "a.wav", content: await audio("wav") }]);
          return h.app.inject({
            method: "POST",
            url: "/api/kits/v1/stem-splits",
            headers: { ...form.headers, ...caller.auth },
            payload: form.payload,
          });
        })();
      };
      const analysed = await send({ analyze: "true" });
      assert.equal(analysed.statusCode, 200, analysed.body);
      assert.equal(analysed.json().analysis, null);
      assert.equal((await h.prisma.separationJob.findUnique({ where: { id: analysed.json().id } }))?.analyze, true);
      for (const fields of [{}, { analyze: "false" }] as Array<Record<string, string>>) {
        const plain = await send(fields);
        assert.equal(plain.statusCode, 200, plain.body);
        assert.equal("analysis" in plain.json(), false);
        assert.equal((await h.prisma.separationJob.findUnique({ where: { id: plain.json().id } }))?.analyze, false);
      }
    });

    test("analyze=maybe is a 422 naming the field, leaving nothing behind", async () => {
      const caller = await h.newCaller();
      const before = await footprint(h);
      const form = multipart({ analyze: "maybe" }, [{ name: "inputFile", filename: "a.wav", content: await audio("wav") }]);
      const res = await h.app.inject({
        method: "POST",
        url: "/api/kits/v1/vocal-separations",
        headers: { ...form.headers, ...caller.auth },
        payload: form.payload,
      });
      assert.equal(res.statusCode, 422, res.body);
      assert.match(res.json().message, /analyze/);
      await assertUnchanged(h, before);
    });
  });
});
