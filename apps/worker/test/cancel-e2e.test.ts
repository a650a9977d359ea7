import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { loadConfig } from "@mixdown/config";
import { registerVoiceCatalogue } from "@mixdown/db";
import { testFilesDir } from "@mixdown/devstack";
import { createStorage, type ObjectStorage } from "@mixdown/storage";
import { writeContentVecSignatureModel } from "@mixdown/voice";
import { catalogueRows } from "@mixdown/voice/catalogue";
import {
  getJson,
  makeAudio,
  makeSong,
  postForm,
  startDeployment,
  upload,
  waitForEnd,
  type Deployment,
} from "../testing/harness.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** CPU seconds (user + system, every thread) the process has used so far. */
async function cpuSeconds(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Child processes (ffmpeg) of `pid` still alive. */
async function childrenOf(pid: number): Promise<string> {
  return (await readFile(`/proc/${pid}/task/${pid}/children`, "utf8")).trim();
}

describe("cancelling jobs through the API, with a worker running them", () => {
  let d: Deployment;
  let storage: ObjectStorage;
  let redis: Redis;
  let queues: Record<"separation" | "voice-conversion", Queue>;
  let aria: number;

  const cancel = (route: string, key = d.key) =>
    fetch(`${d.baseUrl}/api/kits/v1/${route}/cancel`, { method: "POST", headers: { authorization: `Bearer ${key}` } });

  async function waitForProgress(route: string, atLeast: number, timeoutMs = 120_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const job = await getJson(d, route);
      if (job.status !== "running") throw new Error(`${route} ended ${job.status} before it could be cancelled`);
      if (job.progress >= atLeast) return job;
      if (Date.now() > deadline) throw new Error(`${route} did not reach progress ${atLeast}`);
      await sleep(100);
    }
  }

  /** Resolves with the ms from now until BullMQ's entry is completed (the worker's attempt returned). */
  async function attemptEnds(queue: Queue, bullId: string, timeoutMs: number): Promise<number> {
    const start = Date.now();
    while (Date.now() - start < timeoutMs) {
      const job = await queue.getJob(bullId);
      if (job && (await job.isCompleted())) return Date.now() - start;
      await sleep(50);
    }
    throw new Error(`${bullId}: the worker's attempt did not end within ${timeoutMs} ms`);
  }

  before(async () => {
    const models = await testFilesDir("cancel-models-");
    await writeFile(join(models, "contentvec.onnx"), writeContentVecSignatureModel());
    d = await startDeployment({
      WORKER_QUEUES: "separation,voice-conversion",
      WORKER_CONCURRENCY_SEPARATION: "1",
      WORKER_CONCURRENCY_VOICE_CONVERSION: "1",
      VOICE_CONTENTVEC_MODEL: join(models, "contentvec.onnx"),
    });
    await registerVoiceCatalogue(d.prisma, await catalogueRows(d.env.MODELS_DIR!));
    aria = (await d.prisma.voiceModel.findUniqueOrThrow({ where: { slug: "native-aria" } })).id;
    storage = createStorage(loadConfig(d.env));
    redis = new Redis(d.env.REDIS_URL!, { maxRetriesPerRequest: null });
    const opts = { connection: redis, prefix: d.env.QUEUE_PREFIX ?? "mixdown" };
    queues = { separation: new Queue("separation", opts), "voice-conversion": new Queue("voice-conversion", opts) };
  });
  after(async () => {
    await Promise.all(Object.values(queues ?? {}).map((q) => q.close()));
    redis?.disconnect();
    await storage?.close();
    await d?.stop();
  });

  it("stops a long separation mid-run (after the inference call in flight): row cancelled, no outputs stored, no CPU spent after, the queued job never started, the next job runs", async () => {
    const long = await makeSong("long.wav", 120);
    const running = (await (await upload(d, long, "vocal-separations")).json()) as { id: number };
    const queued = (await (await upload(d, await makeSong("short.wav", 4), "vocal-separations")).json()) as { id: number };

    // The second job waits (concurrency 1): its cancel removes the queue entry, so no worker starts it.
    const queuedCancel = await cancel(`vocal-separations/${queued.id}`);
    assert.equal(queuedCancel.status, 200, await queuedCancel.clone().text());
    assert.equal(((await queuedCancel.json()) as { status: string }).status, "cancelled");
    assert.equal(await queues.separation.getJob(`separation-${queued.id}`), undefined, "the waiting queue entry is removed");

    await waitForProgress(`vocal-separations/${running.id}`, 6);
    const res = await cancel(`vocal-separations/${running.id}`);
    assert.equal(res.status, 200, await res.clone().text());
    const record = (await res.json()) as Record<string, unknown>;
    assert.equal(record.status, "cancelled");
    assert.match(String(record.jobEndTime), /^\d{4}-\d\d-\d\d /);
    for (const field of ["vocalAudioFileUrl", "backingAudioFileUrl", "lossyVocalAudioFileUrl"])
      assert.equal(record[field], null, field);
    assert.deepEqual(record.stemFileUrls, []);

    // The task stops after the inference call in flight returns (its thread is never terminated in
    // one: that aborted the process): about a second here, a few more on a loaded machine.
    const ms = await attemptEnds(queues.separation, `separation-${running.id}`, 10_000);
    assert.ok(ms < 10_000, `attempt ended ${ms} ms after the cancel`);
    assert.equal(await childrenOf(d.worker.pid!), "", "no ffmpeg process of the job is left");
    const cpuBefore = await cpuSeconds(d.worker.pid!);
    await sleep(2_000);
    const cpuUsed = (await cpuSeconds(d.worker.pid!)) - cpuBefore;
    assert.ok(cpuUsed < 0.4, `the worker used ${cpuUsed.toFixed(2)} CPU s in 2 s after the cancel`);

    const row = await d.prisma.separationJob.findUniqueOrThrow({ where: { id: running.id } });
    assert.equal(row.status, "cancelled");
    assert.equal(row.vocalKey, null);
    assert.deepEqual(await storage.list(`outputs/vocal-separation/${running.id}/`), [], "no output object under the job's keys");
    const never = await d.prisma.separationJob.findUniqueOrThrow({ where: { id: queued.id } });
    assert.equal(never.status, "cancelled");
    assert.equal(never.progress, 0, "the cancelled waiting job was never started (markStarted sets progress 1)");

    // The slot (and the separation thread, replaced if it had to be) takes the next job at once.
    const next = (await (await upload(d, await makeSong("next.wav", 4), "vocal-separations")).json()) as { id: number };
    const done = await waitForEnd(d, `vocal-separations/${next.id}`, 120_000);
    assert.equal(done.status, "success", done.errorMessage);
    const still = await getJson(d, `vocal-separations/${running.id}`);
    assert.equal(still.status, "cancelled", "a cancelled job stays cancelled");
  });

  it("stops an ensemble's vocal separation during its vocal split: the whole vocal and backing, uploaded while the split runs, are removed", async () => {
    // An ensemble's vocal is split in a second run over the combined whole vocal (one model's is
    // split in the same pass, and its files are all final at once).
    const song = await makeSong("split-long.wav", 60);
    const created = await postForm(d, "vocal-separations", { inputFile: { path: song }, model: "vocals,stems" });
    assert.equal(created.status, 200, await created.clone().text());
    const running = (await created.json()) as { id: number };
    const route = `vocal-separations/${running.id}`;
    const prefix = `outputs/vocal-separation/${running.id}/`;
    await waitForProgress(route, 70, 180_000); // the two members and their combination end at 2/3
    // The first pass's files (the whole vocal and the backing) are final and upload in the background
    // while the split runs; uploads that start only after it would begin with the lead.
    const deadline = Date.now() + 60_000;
    let first: string[] = [];
    while ((first = await storage.list(prefix)).length === 0) {
      if (Date.now() > deadline) throw new Error("nothing was uploaded during the vocal split");
      await sleep(50);
    }
    const names = first.map((k) => k.slice(prefix.length).replace(/\.\w+$/, ""));
    assert.deepEqual(
      [...new Set(names)].filter((n) => n !== "vocals" && n !== "backing"),
      [],
      `uploaded first: ${first.join(", ")}`,
    );
    assert.equal((await getJson(d, route)).status, "running", "still splitting when cancelled");
    const res = await cancel(route);
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(((await res.json()) as { status: string }).status, "cancelled");
    const ms = await attemptEnds(queues.separation, `separation-${running.id}`, 5_000);
    assert.ok(ms < 5_000, `attempt ended ${ms} ms after the cancel`);
    assert.deepEqual(await storage.list(prefix), [], "no output object under the job's keys");
    assert.equal((await getJson(d, route)).status, "cancelled");
  });

  it("answers 409 naming the status for an ended job, 404 for another caller's, an unknown or a malformed id", async () => {
    const short = (await (await upload(d, await makeSong("s.wav", 3), "stem-splits")).json()) as { id: number };
    const done = await waitForEnd(d, `stem-splits/${short.id}`, 120_000);
    assert.equal(done.status, "success", done.errorMessage);
    const ended = await cancel(`stem-splits/${short.id}`);
    assert.equal(ended.status, 409);
    const body = (await ended.json()) as { statusCode: number; error: string; message: string };
    assert.deepEqual({ statusCode: body.statusCode, error: body.error }, { statusCode: 409, error: "Conflict" });
    assert.match(body.message, /has already ended \(status success\)/);
    assert.equal((await getJson(d, `stem-splits/${short.id}`)).status, "success", "a refused cancel changes nothing");

    const { ApiKeyRepository } = await import("@mixdown/db");
    const stranger = await new ApiKeyRepository(d.prisma).createApiKey({ name: "stranger" });
    const theirs = await cancel(`stem-splits/${short.id}`, stranger.key);
    assert.equal(theirs.status, 404);
    assert.match(((await theirs.json()) as { message: string }).message, /not found/);
    assert.equal((await cancel(`vocal-separations/${short.id}`)).status, 404, "a stem split is not a vocal separation");
    assert.equal((await cancel("voice-conversions/987654")).status, 404);
    assert.equal((await cancel("voice-blender/abc")).status, 404);
  });

  it("cancels a voice conversion mid-run: row cancelled, no outputs, the worker's attempt ends", async () => {
    const input = await makeAudio("speech.wav", ["-f", "lavfi", "-i", "sine=f=220:d=600", "-af", "volume=0.5", "-ar", "48000"]);
    const created = await postForm(d, "voice-conversions", { voiceModelId: String(aria), soundFile: { path: input } });
    assert.equal(created.status, 201, await created.clone().text());
    const job = (await created.json()) as { id: number };
    await waitForProgress(`voice-conversions/${job.id}`, 1);
    await sleep(500);
    const res = await cancel(`voice-conversions/${job.id}`);
    assert.equal(res.status, 200, await res.clone().text());
    const record = (await res.json()) as Record<string, unknown>;
    assert.equal(record.status, "cancelled");
    assert.equal(record.outputFileUrl ?? null, null);
    const ms = await attemptEnds(queues["voice-conversion"], `voice-conversion-${job.id}`, 3_000);
    assert.ok(ms < 3_000);
    assert.equal(await childrenOf(d.worker.pid!), "", "the conversion's ffmpeg processes were stopped");
    assert.deepEqual(await storage.list(`outputs/voice-conversion/${job.id}/`), []);
    assert.equal((await cancel(`voice-conversions/${job.id}`)).status, 409);
  });
});
