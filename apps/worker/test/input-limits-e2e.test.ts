import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { loadConfig } from "@mixdown/config";
import { registerVoiceCatalogue } from "@mixdown/db";
import { testFilesDir } from "@mixdown/devstack";
import { createStorage } from "@mixdown/storage";
import { bullJobId } from "@mixdown/queue";
import { catalogueRows } from "@mixdown/voice/catalogue";
import {
  makeSong,
  postForm,
  startDeployment,
  upload,
  waitForEnd,
  waitForQueueEntryEnd,
  type Deployment,
} from "../testing/harness.ts";

const run = promisify(execFile);

// The worker holds jobs to MAX_SEPARATION_SECONDS / MAX_CONVERSION_SECONDS too: a job queued before
// the limit was lowered (here: the API took it under the default, the worker runs with 3 s) fails
// at once, naming the limit and the input's length, and is not retried.
describe("input length limits in the worker", () => {
  let d: Deployment;
  before(async () => {
    d = await startDeployment({}, { worker: false });
  });
  after(async () => {
    await d?.stop();
  });

  it("ends a separation and a conversion whose input is longer than the worker's limit `error`, after one attempt", async () => {
    const song = await makeSong("six-seconds.wav", 6);
    const separation = (await (await upload(d, song, "vocal-separations")).json()) as { id: number };
    await registerVoiceCatalogue(d.prisma, await catalogueRows(d.env.MODELS_DIR!));
    const voice = await d.prisma.voiceModel.findUniqueOrThrow({ where: { slug: "native-aria" } });
    const created = await postForm(d, "voice-conversions", { voiceModelId: String(voice.id), soundFile: { path: song } });
    assert.equal(created.status, 201, await created.clone().text());
    const conversion = (await created.json()) as { id: number };

    d.env.MAX_SEPARATION_SECONDS = "3";
    d.env.MAX_CONVERSION_SECONDS = "3";
    d.startWorker();

    const ended = await waitForEnd(d, `vocal-separations/${separation.id}`);
    assert.equal(ended.status, "error");
    assert.equal(ended.errorMessage, "The input is 0:06 long; the limit is 0:03 (MAX_SEPARATION_SECONDS = 3 s)");
    assert.equal(ended.vocalAudioFileUrl, null);
    const converted = await waitForEnd(d, `voice-conversions/${conversion.id}`);
    assert.equal(converted.status, "error");
    assert.equal(converted.errorMessage, "The input is 0:06 long; the limit is 0:03 (MAX_CONVERSION_SECONDS = 3 s)");

    const job = await waitForQueueEntryEnd(d.api.ctx.queues.queue("separation"), bullJobId("separation", separation.id));
    assert.equal(job.attemptsMade, 1, "a too-long input is not retried");
  });
});

// Free space is checked before any output is written: a worker whose TMP_DIR is a small file
// system (a real tmpfs, mounted by the test: the test setup runs as root) ends the job with the
// room it has and the room the outputs need, and writes nothing.
describe("free space in the worker", () => {
  let d: Deployment;
  let tmp: string;
  before(async () => {
    tmp = await testFilesDir("tmpfs-");
    await run("mount", ["-t", "tmpfs", "-o", "size=6m", "tmpfs", tmp]);
    // No floor (WORKER_MIN_FREE_DISK_MB): this is the check of what the outputs need, on a disk too
    // small for any floor; the floor's own test is in run-job.test.ts.
    d = await startDeployment({ TMP_DIR: tmp, JOB_ATTEMPTS: "1", WORKER_QUEUES: "separation", WORKER_MIN_FREE_DISK_MB: "0" });
  });
  after(async () => {
    await d?.stop();
    if (tmp) await run("umount", [tmp]).catch(() => undefined);
  });

  it("ends a separation whose outputs cannot fit `error`, naming the free and needed space, with no output stored", async () => {
    const song = await makeSong("twenty-seconds.flac", 20);
    const created = (await (await upload(d, song, "vocal-separations")).json()) as { id: number };
    const ended = await waitForEnd(d, `vocal-separations/${created.id}`);
    assert.equal(ended.status, "error");
    assert.match(
      ended.errorMessage,
      /The worker's disk has \d+ MB free in .* and this job's outputs need about \d+ MB \(\d+ files of 20 s\): free space in TMP_DIR/,
    );
    const storage = createStorage(loadConfig(d.env));
    try {
      assert.deepEqual(await storage.list(`outputs/vocal-separation/${created.id}/`), []);
    } finally {
      await storage.close();
    }
    assert.deepEqual(await readdir(join(tmp, "jobs")), [], "the attempt's work folder is gone");
  });
});
