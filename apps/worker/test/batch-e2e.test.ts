import assert from "node:assert/strict";
import { createWriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { after, before, test } from "node:test";
import { ApiKeyRepository } from "@mixdown/db";
import { testFilesDir } from "@mixdown/devstack";
import yauzl from "yauzl";
import { getJson, makeAudio, startDeployment, type Deployment } from "../testing/harness.ts";

const FILES = 50;
let d: Deployment;
before(async () => {
  d = await startDeployment();
});
after(() => d?.stop());

/** A record's timestamp (`YYYY-MM-DD HH:MM:SS.ffffff +00:00`) as milliseconds. */
const msOf = (timestamp: string) => Date.parse(`${timestamp.slice(0, 23).replace(" ", "T")}Z`);

async function post(key: string, route: string, form: FormData): Promise<any> {
  const res = await fetch(`${d.baseUrl}/api/kits/v1/${route}`, {
    method: "POST",
    body: form,
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

async function getAs(key: string, route: string): Promise<any> {
  const res = await fetch(`${d.baseUrl}/api/kits/v1/${route}`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

async function waitFor<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Every entry of a zip file, read through (each one's CRC checked by yauzl as it is read): name -> bytes. */
function readZip(path: string): Promise<Map<string, number>> {
  return new Promise((resolve, reject) => {
    yauzl.open(path, { lazyEntries: true }, (error, zip) => {
      if (error) return reject(error);
      const sizes = new Map<string, number>();
      zip.on("entry", (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (err, stream) => {
          if (err) return reject(err);
          let bytes = 0;
          stream.on("data", (chunk: Buffer) => (bytes += chunk.length));
          stream.on("error", reject);
          stream.on("end", () => {
            sizes.set(entry.fileName, bytes);
            zip.readEntry();
          });
        });
      });
      zip.on("end", () => resolve(sizes));
      zip.on("error", reject);
      zip.readEntry();
    });
  });
}

test(`a batch of ${FILES} short files ends with ${FILES} jobs and one zip, and another caller's job is served while it runs`, async (t) => {
  const take = await makeAudio("take.wav", ["-f", "lavfi", "-i", "sine=f=220:d=0.6", "-ac", "2", "-ar", "44100"]);
  const bytes = new Blob([await readFile(take)]);
  const single = () => {
    const form = new FormData();
    form.append("inputFile", bytes, "solo.wav");
    return form;
  };
  const other = (await new ApiKeyRepository(d.prisma).createApiKey({ name: "second caller" })).key;

  // The second caller's wait on an idle service, for comparison (the first job loads the models).
  const alone = async () => {
    const { id } = await post(other, "vocal-separations", single());
    const done = await waitFor(
      "a job on an idle service ends",
      () => getAs(other, `vocal-separations/${id}`),
      (j) => j.status !== "running",
      120_000,
    );
    assert.equal(done.status, "success", done.errorMessage);
    return done;
  };
  await alone();
  const idleDone = await alone();

  const form = new FormData();
  form.append("kind", "vocal-separation");
  for (let i = 1; i <= FILES; i++) form.append("files", bytes, `take ${String(i).padStart(2, "0")}.wav`);
  const batch = await post(d.key, "batches", form);
  assert.equal(batch.total, FILES);
  assert.equal(batch.rejected.length, 0);

  // Once the batch is being worked on, the second caller sends one job.
  await waitFor(
    "the batch's first job ends",
    () => getJson(d, `batches/${batch.id}`),
    (b) => b.counts.success >= 1,
    120_000,
  );
  const theirs = await post(other, "vocal-separations", single());
  const served = await waitFor(
    "the second caller's job ends",
    () => getAs(other, `vocal-separations/${theirs.id}`),
    (j) => j.status !== "running",
    120_000,
  );
  assert.equal(served.status, "success", served.errorMessage);
  const during = await getJson(d, `batches/${batch.id}`);
  assert.ok(
    during.counts.running >= FILES / 2,
    `the batch was still running when the other caller's job ended (${JSON.stringify(during.counts)})`,
  );

  const ended = await waitFor(
    "the batch ends",
    () => getJson(d, `batches/${batch.id}`),
    (b) => b.status !== "running",
    15 * 60_000,
  );
  assert.equal(ended.status, "success");
  assert.deepEqual(ended.counts, { running: 0, success: FILES, error: 0, cancelled: 0 });
  assert.equal(ended.progress, 100);
  const startedAfter = (
    await d.prisma.separationJob.findMany({ where: { batchId: batch.id }, select: { jobStartTime: true } })
  ).filter((j) => j.jobStartTime.getTime() > msOf(served.jobStartTime)).length;
  assert.ok(startedAfter >= FILES / 2, `${startedAfter} of the batch's jobs started after the other caller's`);

  const waitIdle = msOf(idleDone.jobStartTime) - msOf(idleDone.createdAt);
  const waitBusy = msOf(served.jobStartTime) - msOf(served.createdAt);
  const batchSeconds = (msOf(ended.jobEndTime) - msOf(batch.createdAt)) / 1000;
  t.diagnostic(
    `second caller's job: waited ${waitIdle} ms to start on an idle service, ${waitBusy} ms during the batch (${startedAfter} batch jobs started after it); the batch of ${FILES} took ${batchSeconds.toFixed(1)} s`,
  );

  // One zip of every output: a folder per input file holding that job's files.
  assert.ok(ended.zipUrl);
  const dir = await testFilesDir("batch-zip-");
  const path = join(dir, "batch.zip");
  // The record's link is PUBLIC_BASE_URL's; the API listens on a port of its own here.
  const res = await fetch(`${d.baseUrl}${new URL(ended.zipUrl).pathname}`, { headers: { authorization: `Bearer ${d.key}` } });
  assert.equal(res.status, 200);
  await pipeline(Readable.fromWeb(res.body as never), createWriteStream(path));
  const entries = await readZip(path);
  const folders = new Set([...entries.keys()].map((name) => name.split("/")[0]));
  assert.equal(folders.size, FILES);
  const first = await getJson(d, `vocal-separations/${ended.jobs[0].id}`);
  const files = [first.vocalAudioFileUrl, first.backingAudioFileUrl, first.lossyVocalAudioFileUrl]
    .concat(
      first.stemFileUrls.map((s: { url: string }) => s.url),
      first.lossyStemFileUrls.map((s: { url: string }) => s.url),
    )
    .filter(Boolean);
  assert.equal(entries.size, FILES * new Set(files.map((u: string) => new URL(u).pathname.split("/").pop())).size);
  assert.ok([...entries.keys()].includes("001-take 01/vocals.wav"), [...entries.keys()].slice(0, 8).join(", "));
  for (const [name, size] of entries) assert.ok(size > 0, `${name} is empty`);
});

test("a batch whose worker is killed twice and whose Redis restarts mid-way ends with every job done once", async () => {
  const take = await makeAudio("fault.wav", ["-f", "lavfi", "-i", "sine=f=330:d=1", "-ac", "2", "-ar", "44100"]);
  const bytes = new Blob([await readFile(take)]);
  const form = new FormData();
  form.append("kind", "vocal-separation");
  for (let i = 1; i <= 6; i++) form.append("files", bytes, `fault ${i}.wav`);
  const batch = await post(d.key, "batches", form);
  const ids: number[] = batch.jobs.map((j: { id: number }) => j.id);
  const succeeded = () => d.prisma.separationJob.count({ where: { id: { in: ids }, status: "success" } });
  const underWay = async () =>
    (await d.prisma.separationJob.count({ where: { id: { in: ids }, status: "running", progress: { gt: 0 } } })) > 0;
  const until = (what: string, check: () => Promise<boolean>) => waitFor(what, check, (ok) => ok, 240_000);

  await until("a job is under way", underWay);
  d.worker.kill("SIGKILL");
  d.worker = d.startWorker();
  await until("two jobs succeeded", async () => (await succeeded()) >= 2);
  await d.stack.redis.restart();
  await until("four jobs succeeded and another is under way", async () => (await succeeded()) >= 4 && (await underWay()));
  d.worker.kill("SIGKILL");
  d.worker = d.startWorker();

  const ended = await waitFor(
    "the batch ends",
    () => getJson(d, `batches/${batch.id}`),
    (b) => b.status !== "running",
    240_000,
  );
  assert.deepEqual(ended.counts, { running: 0, success: 6, error: 0, cancelled: 0 });
  // Each job counted once, and its outputs stored once under its own keys, though killed attempts ran it again.
  const usage = await d.prisma.usageRecord.findMany({ where: { rowId: { in: ids } }, orderBy: { rowId: "asc" } });
  assert.deepEqual(
    usage.map((u) => [u.jobKind, u.rowId]),
    ids.map((id) => ["vocal_separation", id]),
  );
  const stored = await d.api.ctx.storage.list("outputs/vocal-separation/");
  for (const id of ids) {
    assert.deepEqual(
      stored.filter((k) => k.startsWith(`outputs/vocal-separation/${id}/`)).sort(),
      ["backing", "harmony", "lead", "reverb", "vocals"]
        .flatMap((f) => [`${f}.mp3`, `${f}.wav`])
        .map((f) => `outputs/vocal-separation/${id}/${f}`)
        .sort(),
    );
  }
  assert.equal(await d.prisma.separationJob.count({ where: { batchId: batch.id } }), 6, "no job made twice");
});
