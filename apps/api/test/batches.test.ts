import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { createJobTables, RunningJobRepository, type MixdownJobTables } from "@mixdown/db";
import { Reconciler } from "@mixdown/queue";
import { bullJobId } from "@mixdown/jobs";
import { jobOutputKeys } from "@mixdown/storage";
import { buffer } from "node:stream/consumers";
import yauzl from "yauzl";
import { ZipFile } from "yazl";
import { assertUnchanged, audio, footprint, multipart, startHarness, type FilePart, type Harness } from "./helpers.ts";

let h: Harness;
let tables: MixdownJobTables;
type Caller = Awaited<ReturnType<Harness["newCaller"]>>;

const BASE = "/api/kits/v1";
const LIMITS = { MAX_BATCH_FILES: "6", MAX_BATCH_BYTES: String(2 * 1024 * 1024), MAX_CALLER_JOBS_IN_FLIGHT: "8" };

before(async () => {
  h = await startHarness("s3", LIMITS);
  tables = createJobTables(h.prisma);
});
after(() => h?.stop());

async function wavs(n: number, prefix = "song"): Promise<FilePart[]> {
  const wav = await audio("wav");
  return Array.from({ length: n }, (_, i) => ({ name: "files", filename: `${prefix} ${i + 1}.wav`, content: wav }));
}

async function createBatch(who: Caller, fields: Record<string, string>, files: FilePart[], headers: Record<string, string> = {}) {
  const form = multipart(fields, files);
  return h.app.inject({
    method: "POST",
    url: `${BASE}/batches`,
    headers: { ...form.headers, ...who.auth, ...headers },
    payload: form.payload,
  });
}

async function priorityOf(jobId: number): Promise<number | undefined> {
  const job = await h.app.ctx.queues.queue("separation").getJob(bullJobId("separation", jobId));
  return job?.opts.priority;
}

/** Ends a batch job `success` with two stored outputs, as a worker's complete does. */
async function succeed(jobId: number, bytes = 1000): Promise<string[]> {
  const { prefix } = jobOutputKeys("vocal-separation", jobId);
  const keys = [`${prefix}vocals.wav`, `${prefix}instrumental.wav`];
  for (const key of keys) await h.app.ctx.storage.putStream(key, Readable.from([randomBytes(bytes)]));
  await tables.separation.complete(jobId, {
    vocalKey: keys[0]!,
    lossyVocalKey: null,
    backingKey: keys[1]!,
    stems: [],
    lossyStems: [],
    models: ["vocals"],
  });
  return keys;
}

/** A zip of `[name, bytes]` entries (null: a folder), written by yazl. */
function zipOf(entries: Array<[string, Buffer | null]>, compress = false): Promise<Buffer> {
  const zip = new ZipFile();
  for (const [name, bytes] of entries) {
    if (bytes) zip.addBuffer(bytes, name, { compress });
    else zip.addEmptyDirectory(name);
  }
  zip.end();
  return buffer(zip.outputStream as Readable);
}

function unzip(zip: Buffer): Promise<Map<string, number>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(zip, { lazyEntries: true }, (error, file) => {
      if (error) return reject(error);
      const entries = new Map<string, number>();
      file.on("entry", (entry: yauzl.Entry) => {
        entries.set(entry.fileName, entry.uncompressedSize);
        file.readEntry();
      });
      file.on("end", () => resolve(entries));
      file.on("error", reject);
      file.readEntry();
    });
  });
}

describe("POST /batches", () => {
  test("makes an ordinary job per audio file and lists a file that is not audio as rejected, with its own create's reason", async () => {
    const me = await h.newCaller();
    const files = [...(await wavs(3)), { name: "files", filename: "notes.txt", content: Buffer.from("not audio at all") }];
    const res = await createBatch(me, { kind: "vocal-separation", webhookUrl: "https://hooks.example.com/done" }, files);
    assert.equal(res.statusCode, 200, res.body);
    const batch = res.json();
    assert.equal(batch.kind, "vocal-separation");
    assert.equal(batch.status, "running");
    assert.equal(batch.total, 3);
    assert.deepEqual(batch.counts, { running: 3, success: 0, error: 0, cancelled: 0 });
    assert.deepEqual(
      batch.jobs.map((j: { fileName: string }) => j.fileName),
      ["song 1.wav", "song 2.wav", "song 3.wav"],
    );
    assert.equal(batch.rejected.length, 1);
    assert.equal(batch.rejected[0].fileName, "notes.txt");
    assert.match(batch.rejected[0].reason, /wav, webm, mp3 or flac/);
    assert.equal(batch.zipUrl, null);

    // Each job is an ordinary vocal separation: fetched, listed and webhooked as one.
    const first = batch.jobs[0].id;
    const job = await h.app.inject({ method: "GET", url: `${BASE}/vocal-separations/${first}`, headers: me.auth });
    assert.equal(job.statusCode, 200);
    assert.equal(job.json().status, "running");
    const rows = await h.prisma.separationJob.findMany({ where: { batchId: batch.id }, orderBy: { id: "asc" } });
    assert.deepEqual(
      rows.map((r) => [r.kind, r.webhookUrl, r.enqueuedAt !== null]),
      Array(3).fill(["vocal_separation", "https://hooks.example.com/done", true]),
    );
    const list = await h.app.inject({ method: "GET", url: `${BASE}/vocal-separations?perPage=10`, headers: me.auth });
    assert.equal(list.json().meta.total, 3);
    // Queued with the caller's turn as priority: its 1st, 2nd and 3rd waiting batch job.
    assert.deepEqual(await Promise.all(rows.map((r) => priorityOf(r.id))), [1, 2, 3]);

    const fetched = await h.app.inject({ method: "GET", url: `${BASE}/batches/${batch.id}`, headers: me.auth });
    assert.deepEqual(fetched.json(), batch);
  });

  test("a caller's next batch queues behind its own running batch jobs, another caller's first batch at the front", async () => {
    const me = await h.newCaller();
    const other = await h.newCaller();
    const one = (await createBatch(me, { kind: "stem-split" }, await wavs(2))).json();
    const two = (await createBatch(me, { kind: "stem-split" }, await wavs(2))).json();
    const theirs = (await createBatch(other, { kind: "stem-split" }, await wavs(1))).json();
    assert.deepEqual(await Promise.all(one.jobs.map((j: { id: number }) => priorityOf(j.id))), [1, 2]);
    assert.deepEqual(await Promise.all(two.jobs.map((j: { id: number }) => priorityOf(j.id))), [3, 4]);
    assert.deepEqual(await Promise.all(theirs.jobs.map((j: { id: number }) => priorityOf(j.id))), [1]);
    // A job created on its own has no priority: BullMQ serves it before every waiting batch job.
    const form = multipart(
      {},
      (await wavs(1)).map((f) => ({ ...f, name: "inputFile" })),
    );
    const single = await h.app.inject({
      method: "POST",
      url: `${BASE}/stem-splits`,
      headers: { ...form.headers, ...other.auth },
      payload: form.payload,
    });
    assert.equal(single.statusCode, 200, single.body);
    assert.equal(await priorityOf(single.json().id), undefined);
  });

  test("a batch job whose queue entry was lost (Redis data gone) is added again by the reconciler with its caller's turn", async () => {
    const me = await h.newCaller();
    const batch = (await createBatch(me, { kind: "stem-split" }, await wavs(3))).json();
    const [first, second, third] = batch.jobs.map((j: { id: number }) => j.id);
    await succeed(first);
    for (const id of [second, third]) await h.app.ctx.queues.queue("separation").remove(bullJobId("separation", id));
    assert.equal(await priorityOf(second), undefined);
    const reconciler = new Reconciler({ queues: h.app.ctx.queues, source: new RunningJobRepository(h.prisma), graceSeconds: 0 });
    const result = await reconciler.reconcileOnce(new Date(Date.now() + 60_000));
    assert.ok(result.ran);
    // The first job has ended: the other two are now the caller's 1st and 2nd.
    assert.deepEqual([await priorityOf(second), await priorityOf(third)], [1, 2]);
  });

  test("the kind's own options and their 422s apply: an unknown model refuses the whole batch and leaves nothing behind", async () => {
    const me = await h.newCaller();
    const before = await footprint(h);
    const res = await createBatch(me, { kind: "vocal-separation", model: "no-such-model" }, await wavs(2));
    assert.equal(res.statusCode, 422, res.body);
    assert.match(res.json().message, /no-such-model/);
    await assertUnchanged(h, before);
    const kind = await createBatch(me, { kind: "voice-conversion" }, await wavs(1));
    assert.equal(kind.statusCode, 422);
    assert.equal(kind.json().message, 'kind "voice-conversion" is not a batch\'s kind (one of vocal-separation, stem-split)');
    await assertUnchanged(h, before);
  });

  test("a batch in which no file is audio is a 422 naming each file's problem, and leaves nothing behind", async () => {
    const me = await h.newCaller();
    const before = await footprint(h);
    const res = await createBatch(me, { kind: "vocal-separation" }, [
      { name: "files", filename: "a.txt", content: Buffer.from("hello") },
      { name: "files", filename: "b.bin", content: randomBytes(3000) },
    ]);
    assert.equal(res.statusCode, 422, res.body);
    assert.match(res.json().message, /^no file of the batch is audio a vocal separation takes: a\.txt: .*; b\.bin: /);
    await assertUnchanged(h, before);
    const none = await createBatch(me, { kind: "vocal-separation" }, []);
    assert.equal(none.statusCode, 422);
    assert.match(none.json().message, /files is required/);
    await assertUnchanged(h, before);
  });

  test("over MAX_BATCH_FILES or MAX_BATCH_BYTES is a 413 naming the setting, and leaves nothing behind", async () => {
    const me = await h.newCaller();
    const before = await footprint(h);
    const many = await createBatch(me, { kind: "vocal-separation" }, await wavs(7));
    assert.equal(many.statusCode, 413, many.body);
    assert.match(many.json().message, /at most 6 files \(MAX_BATCH_FILES\)/);
    const big = randomBytes(900 * 1024);
    const bytes = await createBatch(
      me,
      { kind: "vocal-separation" },
      [1, 2, 3].map((i) => ({ name: "files", filename: `${i}.wav`, content: big })),
    );
    assert.equal(bytes.statusCode, 413, bytes.body);
    assert.match(bytes.json().message, /MAX_BATCH_BYTES/);
    await assertUnchanged(h, before);
  });

  test("a batch that would take the caller past MAX_CALLER_JOBS_IN_FLIGHT running jobs is a 429, nothing stored", async () => {
    const me = await h.newCaller();
    assert.equal((await createBatch(me, { kind: "vocal-separation" }, await wavs(6))).statusCode, 200);
    const before = await footprint(h);
    const res = await createBatch(me, { kind: "vocal-separation" }, await wavs(3));
    assert.equal(res.statusCode, 429, res.body);
    assert.match(res.json().message, /9 running jobs, over MAX_CALLER_JOBS_IN_FLIGHT \(8\)/);
    assert.equal(res.headers["retry-after"], "60");
    await assertUnchanged(h, before);
    // Another caller is not held to this one's jobs.
    assert.equal((await createBatch(await h.newCaller(), { kind: "vocal-separation" }, await wavs(3))).statusCode, 200);
  });

  test("a zip part is a batch's files: each audio entry a job, folders and hidden files skipped, the rest rejected", async () => {
    const me = await h.newCaller();
    const wav = await audio("wav");
    const zip = await zipOf([
      ["album/", null],
      ["album/01 intro.wav", wav],
      ["album/02 song.wav", wav],
      ["album/cover.txt", Buffer.from("not audio")],
      ["__MACOSX/album/._01 intro.wav", Buffer.from("resource fork")],
      [".DS_Store", Buffer.from("finder")],
    ]);
    const res = await createBatch(me, { kind: "stem-split" }, [{ name: "zip", filename: "album.zip", content: zip }]);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(
      res.json().jobs.map((j: { fileName: string }) => j.fileName),
      ["album/01 intro.wav", "album/02 song.wav"],
    );
    assert.deepEqual(
      res.json().rejected.map((r: { fileName: string }) => r.fileName),
      ["album/cover.txt"],
    );
  });

  test("a zip that is not one, or that unpacks past MAX_BATCH_BYTES, is refused and leaves nothing behind", async () => {
    const me = await h.newCaller();
    const before = await footprint(h);
    const broken = await createBatch(me, { kind: "stem-split" }, [
      { name: "zip", filename: "a.zip", content: Buffer.from("PK nope") },
    ]);
    assert.equal(broken.statusCode, 422, broken.body);
    assert.match(broken.json().message, /^zip is not a zip archive/);
    // Three entries of 900 KB of zeros: a few KB as a zip, 2.7 MB unpacked.
    const zeros = Buffer.alloc(900 * 1024);
    const bomb = await zipOf(
      [1, 2, 3].map((i) => [`${i}.wav`, zeros] as [string, Buffer]),
      true,
    );
    assert.ok(bomb.length < 64 * 1024);
    const big = await createBatch(me, { kind: "stem-split" }, [{ name: "zip", filename: "b.zip", content: bomb }]);
    assert.equal(big.statusCode, 413, big.body);
    assert.match(big.json().message, /MAX_BATCH_BYTES\); the zip unpacks to more/);
    const both = await createBatch(me, { kind: "stem-split" }, [
      ...(await wavs(1)),
      { name: "zip", filename: "c.zip", content: await zipOf([["x.wav", await audio("wav")]]) },
    ]);
    assert.equal(both.statusCode, 422);
    await assertUnchanged(h, before);
  });

  test("an Idempotency-Key replays the batch it first made and creates nothing more", async () => {
    const me = await h.newCaller();
    const files = await wavs(2);
    const first = await createBatch(me, { kind: "stem-split" }, files, { "idempotency-key": "batch-1" });
    assert.equal(first.statusCode, 200);
    const before = await footprint(h);
    const again = await createBatch(me, { kind: "stem-split" }, files, { "idempotency-key": "batch-1" });
    assert.equal(again.statusCode, 200);
    assert.equal(again.headers["idempotent-replayed"], "true");
    assert.equal(again.json().id, first.json().id);
    await assertUnchanged(h, before);
    const other = await createBatch(me, { kind: "stem-split" }, files.slice(1), { "idempotency-key": "batch-1" });
    assert.equal(other.statusCode, 409);
  });
});

describe("a batch's reads, cancel, zip and delete", () => {
  test("list pages the caller's batches only, in id order", async () => {
    const me = await h.newCaller();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await createBatch(me, { kind: "stem-split" }, await wavs(1))).json().id);
    await createBatch(await h.newCaller(), { kind: "stem-split" }, await wavs(1));
    const res = await h.app.inject({ method: "GET", url: `${BASE}/batches?perPage=2&order=desc`, headers: me.auth });
    assert.equal(res.statusCode, 200);
    const { data, meta } = res.json();
    assert.deepEqual(
      data.map((b: { id: number }) => b.id),
      [ids[2], ids[1]],
    );
    assert.equal(meta.total, 3);
    assert.equal(meta.nextPageUrl, `${BASE}/batches?page=2&perPage=2&order=desc`);
    const stranger = await h.app.inject({ method: "GET", url: `${BASE}/batches/${ids[0]}`, headers: (await h.newCaller()).auth });
    assert.equal(stranger.statusCode, 404);
  });

  test("cancel ends the jobs still running and leaves the ended ones; a batch with none running is a 409", async () => {
    const me = await h.newCaller();
    const batch = (await createBatch(me, { kind: "vocal-separation" }, await wavs(3))).json();
    await succeed(batch.jobs[0].id);
    const res = await h.app.inject({ method: "POST", url: `${BASE}/batches/${batch.id}/cancel`, headers: me.auth });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().counts, { running: 0, success: 1, error: 0, cancelled: 2 });
    assert.equal(res.json().status, "cancelled");
    for (const job of batch.jobs.slice(1)) assert.equal(await priorityOf(job.id), undefined, "the waiting entry is removed");
    const again = await h.app.inject({ method: "POST", url: `${BASE}/batches/${batch.id}/cancel`, headers: me.auth });
    assert.equal(again.statusCode, 409);
  });

  test("the zip is a 409 while a job runs, then holds every output of the successful jobs, a folder per input file", async () => {
    const me = await h.newCaller();
    const files = await wavs(3);
    files[2] = { ...files[2]!, filename: "../same name.wav" };
    files[1] = { ...files[1]!, filename: "same name.wav" };
    const batch = (await createBatch(me, { kind: "vocal-separation" }, files)).json();
    const zipOf = () => h.app.inject({ method: "GET", url: `${BASE}/batches/${batch.id}/zip`, headers: me.auth });
    await succeed(batch.jobs[0].id, 5000);
    const early = await zipOf();
    assert.equal(early.statusCode, 409);
    assert.match(early.json().message, /still running \(2 of 3 jobs\)/);
    await succeed(batch.jobs[1].id, 7000);
    await tables.separation.fail(batch.jobs[2].id, "could not decode");
    const record = (await h.app.inject({ method: "GET", url: `${BASE}/batches/${batch.id}`, headers: me.auth })).json();
    assert.equal(record.status, "error");
    assert.match(record.zipUrl, new RegExp(`^https?://[^/]+${BASE}/batches/${batch.id}/zip$`));
    const res = await zipOf();
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers["content-type"], "application/zip");
    assert.equal(res.headers["content-disposition"], `attachment; filename="batch-${batch.id}.zip"`);
    const entries = await unzip(res.rawPayload);
    assert.deepEqual(Object.fromEntries(entries), {
      "001-song 1/vocals.wav": 5000,
      "001-song 1/instrumental.wav": 5000,
      "002-same name/vocals.wav": 7000,
      "002-same name/instrumental.wav": 7000,
    });
  });

  test("the zip streams: a batch of 240 MB of outputs is downloaded with the API process's memory flat", async (t) => {
    const me = await h.newCaller();
    const batch = (await createBatch(me, { kind: "vocal-separation" }, await wavs(6))).json();
    for (const job of batch.jobs) await succeed(job.id, 20 * 1024 * 1024);
    const address = await h.app.listen({ port: 0, host: "127.0.0.1" });
    global.gc?.();
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    let bytes = 0;
    try {
      const res = await fetch(`${address}${BASE}/batches/${batch.id}/zip`, { headers: me.auth });
      assert.equal(res.status, 200);
      for await (const chunk of res.body!) bytes += (chunk as Uint8Array).length;
    } finally {
      clearInterval(sampler);
    }
    assert.ok(bytes > 240 * 1024 * 1024, `the zip holds every output (${bytes} bytes)`);
    const grew = (peak - baseline) / 1024 / 1024;
    t.diagnostic(`zip of ${(bytes / 1024 / 1024).toFixed(0)} MB streamed; RSS peak ${grew.toFixed(1)} MB over its baseline`);
    // RSS, not the heap: what the process holds, freed buffers the allocator keeps included.
    assert.ok(grew < 100, `RSS grew ${grew.toFixed(1)} MB while 240 MB were zipped and downloaded`);
  });

  test("delete removes every job of the batch as a job's delete does (files, rows, queue entries), then the batch", async () => {
    const me = await h.newCaller();
    const before = await footprint(h);
    const batch = (await createBatch(me, { kind: "vocal-separation" }, await wavs(3), { "idempotency-key": "to-delete" })).json();
    const outputs = await succeed(batch.jobs[0].id);
    const res = await h.app.inject({ method: "DELETE", url: `${BASE}/batches/${batch.id}`, headers: me.auth });
    assert.equal(res.statusCode, 204, res.body);
    await assertUnchanged(h, before);
    for (const key of outputs) assert.equal(await h.app.ctx.storage.exists(key), false);
    assert.equal(await h.prisma.idempotencyKey.count({ where: { resourceKind: "batch", resourceId: batch.id } }), 0);
    const again = await h.app.inject({ method: "DELETE", url: `${BASE}/batches/${batch.id}`, headers: me.auth });
    assert.equal(again.statusCode, 404);
  });
});
