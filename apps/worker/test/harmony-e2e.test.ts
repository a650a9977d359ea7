import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { writeFloatWav } from "@mixdown/analysis/testing";
import { testFilesDir } from "@mixdown/devstack";
import { diatonicTarget, PITCH_HOP, PITCH_RATE, shareInTune, sungNotes } from "@mixdown/harmony";
import { framesOfScore, melodyScore, rangeAround, singMelody, type ScoreNote } from "@mixdown/harmony/testing";
import { parseMusicalKey } from "@mixdown/jobs";
import {
  download,
  getJson,
  makeAudio,
  makeSong,
  probe,
  startDeployment,
  startWebhookReceiver,
  waitForEnd,
  type Deployment,
} from "../testing/harness.ts";

/** POSTs a harmony with the deployment's key (and an Idempotency-Key when given). */
async function createHarmony(d: Deployment, path: string, fields: Record<string, string>, idempotencyKey?: string) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append("inputFile", new Blob([await readFile(path)]), path.split("/").pop());
  return fetch(`${d.baseUrl}/api/kits/v1/harmonies`, {
    method: "POST",
    body: form,
    headers: { authorization: `Bearer ${d.key}`, ...(idempotencyKey ? { "idempotency-key": idempotencyKey } : {}) },
  });
}

/** A sung-like melody of `count` notes in `keyText`, as a WAV file, with its score. */
async function sungLead(name: string, keyText: string, count: number): Promise<{ path: string; score: ScoreNote[] }> {
  const score = melodyScore(parseMusicalKey(keyText)!, { centre: 62, count, noteSeconds: 0.4, seed: count });
  const path = join(await testFilesDir("harmony-"), name);
  await writeFloatWav(path, [singMelody(score)], 44100);
  return { path, score };
}

describe("harmonies through the API and the worker", () => {
  let d: Deployment;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  before(async () => {
    receiver = await startWebhookReceiver("/hooks/harmony");
    d = await startDeployment({ WORKER_QUEUES: "harmony,webhook-delivery", WEBHOOK_RETRY_DELAY_MS: "200" });
  });
  after(async () => {
    await d?.stop();
    await receiver?.close();
  });

  it("a third above in A minor: the harmony lands on the key's notes, the mix and mp3s are the lead's length; idempotent; usage; webhook", async () => {
    const { path, score } = await sungLead("lead.wav", "A minor", 10);
    const fields = { key: "A minor", interval: "third", direction: "above", webhookUrl: receiver.url };
    const first = await createHarmony(d, path, fields, "harmony-once");
    assert.equal(first.status, 200, await first.clone().text());
    const created = (await first.json()) as { id: number };
    const again = await createHarmony(d, path, fields, "harmony-once");
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal(((await again.json()) as { id: number }).id, created.id, "the same key made one job");

    const job = await waitForEnd(d, `harmonies/${created.id}`);
    assert.equal(job.status, "success", job.errorMessage);
    assert.equal(job.progress, 100);
    assert.equal(job.key, "A minor");
    assert.equal(job.keySource, "given");
    assert.ok(job.notes >= 5 && job.notes <= 10, `${job.notes} notes`);
    assert.deepEqual(job.models, []);
    const harmony = await download(job.harmonyFileUrl);
    const mix = await download(job.mixFileUrl);
    const inProbe = await probe(path);
    for (const file of [harmony, mix]) {
      const out = await probe(file);
      assert.equal(out.sampleRate, inProbe.sampleRate, "the outputs keep the input's rate");
      assert.equal(out.samples, inProbe.samples, "and its length");
    }
    for (const url of [job.lossyHarmonyFileUrl, job.lossyMixFileUrl])
      assert.equal((await probe(await download(url))).codec, "mp3");
    const key = parseMusicalKey("A minor")!;
    const targetOf = (n: ScoreNote) => diatonicTarget(n.midi, key, "third", "above").target;
    const { f0 } = await sungNotes(harmony, { range: rangeAround(score.map(targetOf)) });
    const onTarget = shareInTune(f0, { key, targets: framesOfScore(score, f0.length, PITCH_HOP / PITCH_RATE, targetOf) });
    assert.ok(onTarget > 0.85, `${onTarget.toFixed(3)} of the harmony's frames on the intended note`);

    const usage = await d.prisma.usageRecord.findFirst({ where: { jobKind: "harmony", rowId: created.id } });
    assert.ok(usage && Math.abs(usage.seconds - inProbe.duration) < 0.05);
    const hook = await receiver.waitFor(created.id);
    assert.equal(hook?.event, "job.success");
    assert.equal(hook?.body.type, "harmony");
  });

  it("without a key the worker finds one and says so; a sixth below", async () => {
    const { path } = await sungLead("nokey.wav", "G major", 12);
    const res = await createHarmony(d, path, { interval: "sixth", direction: "below" });
    assert.equal(res.status, 200, await res.clone().text());
    const created = (await res.json()) as { id: number; key: string | null; keySource: string | null };
    assert.equal(created.key, null);
    const job = await waitForEnd(d, `harmonies/${created.id}`);
    assert.equal(job.status, "success", job.errorMessage);
    assert.equal(job.keySource, "found");
    assert.ok(parseMusicalKey(job.key), job.key);
    assert.ok(job.keyConfidence > 0 && job.keyConfidence <= 1, String(job.keyConfidence));
  });

  it("a mix with isolateVocal: the vocal isolated by the separation model, the mix file is the song with the harmony", async () => {
    const song = await makeSong("mix.wav", 4);
    const res = await createHarmony(d, song, { key: "C major", isolateVocal: "true" });
    const created = (await res.json()) as { id: number };
    const job = await waitForEnd(d, `harmonies/${created.id}`);
    assert.equal(job.status, "success", job.errorMessage);
    assert.equal(job.isolateVocal, true);
    assert.deepEqual(job.models, ["vocals"]);
    const [inProbe, outProbe] = [await probe(song), await probe(await download(job.mixFileUrl))];
    assert.equal(outProbe.samples, inProbe.samples);
  });

  it("noise without a sung note fails the job as bad input, naming why", async () => {
    const noise = await makeAudio("noise.wav", ["-f", "lavfi", "-i", "anoisesrc=d=2:a=0.2:c=white", "-ar", "44100"]);
    const { id } = (await (await createHarmony(d, noise, { key: "A minor" })).json()) as { id: number };
    const job = await waitForEnd(d, `harmonies/${id}`);
    assert.equal(job.status, "error");
    assert.match(job.errorMessage, /No sung note was found in the vocal/);
  });

  it("cancel stops a long harmony mid-run: cancelled, no outputs stored, the next job runs", async () => {
    const { path } = await sungLead("long.wav", "E major", 150);
    const { id } = (await (await createHarmony(d, path, { key: "E major" })).json()) as { id: number };
    const route = `harmonies/${id}`;
    const deadline = Date.now() + 120_000;
    for (;;) {
      const job = await getJson(d, route);
      assert.equal(job.status, "running", "still running when cancelled");
      if (job.progress >= 20) break;
      if (Date.now() > deadline) throw new Error("the harmony made no progress");
      await sleep(100);
    }
    const cancelled = await fetch(`${d.baseUrl}/api/kits/v1/${route}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.key}` },
    });
    assert.equal(((await cancelled.json()) as { status: string }).status, "cancelled");
    const { path: short } = await sungLead("short.wav", "E major", 4);
    const next = (await (await createHarmony(d, short, { key: "E major" })).json()) as { id: number };
    assert.equal((await waitForEnd(d, `harmonies/${next.id}`)).status, "success");
    assert.equal((await getJson(d, route)).status, "cancelled");
    assert.deepEqual(await d.api.ctx.storage.list(`outputs/harmony/${id}/`), []);
  });
});
