import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { testFilesDir } from "@mixdown/devstack";
import {
  decodeFloat,
  download,
  getJson,
  makeAudio,
  makeSong,
  probe,
  snrDb,
  startDeployment,
  startWebhookReceiver,
  waitForEnd,
  type Deployment,
} from "../testing/harness.ts";

/** POSTs a vocal repair with the deployment's key (and an Idempotency-Key when given). */
async function createRepair(d: Deployment, path: string, fields: Record<string, string>, idempotencyKey?: string) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append("inputFile", new Blob([await readFile(path)]), path.split("/").pop());
  return fetch(`${d.baseUrl}/api/kits/v1/vocal-repairs`, {
    method: "POST",
    body: form,
    headers: { authorization: `Bearer ${d.key}`, ...(idempotencyKey ? { "idempotency-key": idempotencyKey } : {}) },
  });
}

describe("vocal repairs through the API and the worker", () => {
  let d: Deployment;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  before(async () => {
    receiver = await startWebhookReceiver("/hooks/repair");
    d = await startDeployment({ WORKER_QUEUES: "vocal-repair,webhook-delivery", WEBHOOK_RETRY_DELAY_MS: "200" });
  });
  after(async () => {
    await d?.stop();
    await receiver?.close();
  });

  it("denoise: a spoken take under white noise comes back closer to the clean take; the create is idempotent; usage counted", async () => {
    const clean = join(await testFilesDir("repair-"), "clean.wav");
    await promisify(execFile)("espeak-ng", [
      "-v",
      "en-us",
      "-s",
      "150",
      "-w",
      clean,
      "Every voice has a story, and noise hides it.",
    ]);
    const noisy = await makeAudio("noisy.wav", [
      "-i",
      clean,
      "-f",
      "lavfi",
      "-i",
      "anoisesrc=color=white:amplitude=0.04:seed=3:sample_rate=22050",
      "-filter_complex",
      "[0:a][1:a]amix=inputs=2:duration=first:normalize=0",
      "-c:a",
      "pcm_s16le",
    ]);
    const first = await createRepair(d, noisy, { steps: "denoise" }, "repair-once");
    assert.equal(first.status, 200, await first.clone().text());
    const created = (await first.json()) as { id: number };
    const again = await createRepair(d, noisy, { steps: "denoise" }, "repair-once");
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal(((await again.json()) as { id: number }).id, created.id, "the same key made one job");

    const job = await waitForEnd(d, `vocal-repairs/${created.id}`);
    assert.equal(job.status, "success", job.errorMessage);
    assert.equal(job.progress, 100);
    assert.deepEqual(job.steps, ["denoise"]);
    assert.deepEqual(job.models, []);
    const output = await download(job.outputFileUrl);
    const lossy = await download(job.lossyOutputFileUrl);
    const [inProbe, outProbe] = [await probe(noisy), await probe(output)];
    assert.equal(outProbe.sampleRate, inProbe.sampleRate, "the output keeps the input's rate");
    assert.equal(outProbe.samples, inProbe.samples, "and its length");
    assert.equal((await probe(lossy)).codec, "mp3");
    const reference = await decodeFloat(clean);
    const before = snrDb(reference, await decodeFloat(noisy), { sameLength: true });
    const after = snrDb(reference, await decodeFloat(output), { sameLength: true });
    assert.ok(after > before + 3, `SNR ${before.toFixed(1)} dB in, ${after.toFixed(1)} dB out`);
    const usage = await d.prisma.usageRecord.findFirst({ where: { jobKind: "vocal_repair", rowId: created.id } });
    assert.ok(usage && Math.abs(usage.seconds - inProbe.duration) < 0.05);
  });

  it("a mix with isolateVocal, denoise and dereverb: the vocal isolated, both steps run, the models named; its webhook POSTed", async () => {
    const song = await makeSong("mix.wav", 4);
    const res = await createRepair(d, song, { steps: "denoise,dereverb", isolateVocal: "true", webhookUrl: receiver.url });
    assert.equal(res.status, 200, await res.clone().text());
    const created = (await res.json()) as { id: number; steps: string[] };
    assert.deepEqual(created.steps, ["dereverb", "denoise"], "in their fixed order");
    const job = await waitForEnd(d, `vocal-repairs/${created.id}`);
    assert.equal(job.status, "success", job.errorMessage);
    assert.equal(job.isolateVocal, true);
    assert.deepEqual(job.models, ["vocals", "vocalsplit"]);
    const output = await download(job.outputFileUrl);
    const [inProbe, outProbe] = [await probe(song), await probe(output)];
    assert.equal(outProbe.sampleRate, inProbe.sampleRate);
    assert.equal(outProbe.samples, inProbe.samples);
    const hook = await receiver.waitFor(created.id);
    assert.equal(hook?.event, "job.success");
    assert.equal(hook?.body.type, "repair");
  });

  it("cancel stops a long repair mid-run: cancelled, no outputs stored, the next job runs", async () => {
    const song = await makeSong("long.wav", 90);
    const res = await createRepair(d, song, { steps: "denoise,dereverb", isolateVocal: "true" });
    const { id } = (await res.json()) as { id: number };
    const route = `vocal-repairs/${id}`;
    const deadline = Date.now() + 120_000;
    for (;;) {
      const job = await getJson(d, route);
      assert.equal(job.status, "running", "still running when cancelled");
      if (job.progress >= 5) break;
      if (Date.now() > deadline) throw new Error("the repair made no progress");
      await sleep(100);
    }
    const cancelled = await fetch(`${d.baseUrl}/api/kits/v1/${route}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.key}` },
    });
    assert.equal(((await cancelled.json()) as { status: string }).status, "cancelled");
    // the attempt stops and discards whatever it stored; a short job after it runs
    const short = await makeAudio("short.wav", ["-f", "lavfi", "-i", "anoisesrc=d=1:a=0.1", "-ar", "48000"]);
    const next = (await (await createRepair(d, short, { steps: "denoise" })).json()) as { id: number };
    assert.equal((await waitForEnd(d, `vocal-repairs/${next.id}`)).status, "success");
    assert.equal((await getJson(d, route)).status, "cancelled");
    assert.deepEqual(await d.api.ctx.storage.list(`outputs/vocal-repair/${id}/`), []);
  });
});
