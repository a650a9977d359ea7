import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { probeAudio } from "@mixdown/audio";
import { createStorage } from "@mixdown/storage";
import { loadConfig } from "@mixdown/config";
import {
  decodeFloat,
  download,
  makeAudio,
  postForm,
  probe,
  snrDb,
  startDeployment,
  waitForEnd,
  type Deployment,
} from "../testing/harness.ts";
import { signatureValid, startReceiver } from "../testing/webhook-receiver.ts";

const fixtures = join(import.meta.dirname, "../../../packages/mastering/test/fixtures/matchering");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("masterings through the API and the worker", () => {
  let d: Deployment;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  before(async () => {
    receiver = await startReceiver();
    d = await startDeployment({ WORKER_QUEUES: "mastering,webhook-delivery", WEBHOOK_RETRY_DELAY_MS: "200" });
  });
  after(async () => {
    await d?.stop();
    await receiver?.close();
  });

  it("reference mode: success, the 24-bit master is upstream Matchering's output (SNR >= 60 dB), 16-bit and mp3 beside it, loudness before and after, the webhook signed", async () => {
    const res = await postForm(d, "masterings", {
      targetFile: { path: join(fixtures, "song-loud-stereo.wav") },
      referenceFile: { path: join(fixtures, "reference-quiet-mono.wav") },
      webhookUrl: receiver.url("/hooks/master"),
    });
    assert.equal(res.status, 201, await res.clone().text());
    const created = (await res.json()) as { id: number };
    const job = await waitForEnd(d, `masterings/${created.id}`);
    assert.equal(job.status, "success", job.errorMessage);
    assert.equal(job.progress, 100);
    assert.equal(job.processor, "matchering");
    assert.equal(job.mode, "reference");

    const [wav24, wav16, mp3] = await Promise.all([
      download(job.outputFileUrl),
      download(job.output16BitFileUrl),
      download(job.lossyOutputFileUrl),
    ]);
    const [p24, p16, pmp3] = await Promise.all([probe(wav24), probe(wav16), probe(mp3)]);
    assert.deepEqual([p24.codec, p24.sampleRate, p24.samples], ["pcm_s24le", 44100, 220500]);
    assert.deepEqual([p16.codec, p16.sampleRate, p16.samples], ["pcm_s16le", 44100, 220500]);
    assert.equal(pmp3.codec, "mp3");
    const upstream = await decodeFloat(join(fixtures, "upstream-loud-to-quiet-mono.wav"));
    const snr24 = snrDb(upstream, await decodeFloat(wav24), { sameLength: true });
    const snr16 = snrDb(upstream, await decodeFloat(wav16), { sameLength: true });
    assert.ok(snr24 >= 60 && snr16 >= 60, `SNR 24-bit ${snr24.toFixed(1)} dB, 16-bit ${snr16.toFixed(1)} dB`);

    // the reference is 11 dB quieter than the target: so is the master
    assert.ok(job.loudnessAfter.integratedLufs < job.loudnessBefore.integratedLufs - 5, JSON.stringify(job));
    assert.ok(job.loudnessAfter.truePeakDbtp < 0);

    const [hook] = await receiver.waitFor("/hooks/master", 1);
    assert.equal(hook!.headers["mixdown-event"], "job.success");
    const secret = (await d.prisma.apiKey.findFirstOrThrow({ where: { name: "e2e" } })).webhookSecret;
    assert.ok(signatureValid(secret, hook!.headers["mixdown-signature"] as string, hook!.body));
    const delivered = JSON.parse(hook!.body);
    assert.deepEqual([delivered.id, delivered.status, delivered.loudnessAfter], [job.id, "success", job.loudnessAfter]);
    const usage = await d.prisma.usageRecord.findFirst({ where: { jobKind: "mastering", rowId: created.id } });
    assert.ok(usage && Math.abs(usage.seconds - 5) < 0.01);
  });

  it("loudness mode on a mono 48 kHz file: the master keeps its rate and channel, at the target loudness (linear)", async () => {
    const song = await makeAudio("swell.flac", [
      "-f",
      "lavfi",
      "-i",
      "aevalsrc='(0.01+0.04*(0.5+0.5*sin(2*PI*t/5)))*(0.6*sin(2*PI*196*t)+0.3*sin(2*PI*784*t)+0.2*(random(0)-0.5))':s=48000:d=10",
      "-c:a",
      "flac",
    ]);
    const res = await postForm(d, "masterings", { targetFile: { path: song }, targetLufs: "-20", truePeakDb: "-1" });
    assert.equal(res.status, 201, await res.clone().text());
    const job = await waitForEnd(d, `masterings/${((await res.json()) as { id: number }).id}`);
    assert.equal(job.status, "success", job.errorMessage);
    assert.equal(job.processor, "ffmpeg loudnorm linear");
    const wav24 = await download(job.outputFileUrl);
    const p = await probeAudio(wav24);
    // mono stays mono: duplicated to stereo, BS.1770 would count it 3 LU louder
    assert.deepEqual([p.codec, p.sampleRate, p.channels], ["pcm_s24le", 48000, 1]);
    // one gain: the range is unchanged, the loudness moved by what loudnorm measured (within its 0.1 steps)
    assert.ok(Math.abs(job.loudnessAfter.loudnessRangeLu - job.loudnessBefore.loudnessRangeLu) <= 0.2, JSON.stringify(job));
    assert.ok(job.loudnessAfter.integratedLufs > job.loudnessBefore.integratedLufs + 15);
    assert.ok(job.loudnessAfter.truePeakDbtp <= -0.9);
  });

  it("an Idempotency-Key replays the same record; a cancel stops a long reference mastering mid-run with nothing stored", async () => {
    const long = await makeAudio("long.mp3", [
      "-f",
      "lavfi",
      "-i",
      "anoisesrc=d=480:c=pink:a=0.3",
      "-ac",
      "2",
      "-c:a",
      "libmp3lame",
      "-b:a",
      "64k",
    ]);
    const send = () => {
      const form = new FormData();
      return import("node:fs/promises").then(async ({ readFile }) => {
        form.append("targetFile", new Blob([await readFile(long)]), "long.mp3");
        form.append("referenceFile", new Blob([await readFile(join(fixtures, "reference-loud-stereo.wav"))]), "ref.wav");
        return fetch(`${d.baseUrl}/api/kits/v1/masterings`, {
          method: "POST",
          body: form,
          headers: { authorization: `Bearer ${d.key}`, "idempotency-key": "master-once" },
        });
      });
    };
    const first = await send();
    assert.equal(first.status, 201, await first.clone().text());
    const { id } = (await first.json()) as { id: number };
    const again = await send();
    assert.equal(again.status, 201);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal(((await again.json()) as { id: number }).id, id);
    assert.equal(await d.prisma.masteringJob.count({ where: { inputFileName: "long.mp3" } }), 1);

    const deadline = Date.now() + 120_000;
    while ((await d.prisma.masteringJob.findUniqueOrThrow({ where: { id } })).progress < 10) {
      assert.ok(Date.now() < deadline, "the mastering did not get going");
      await sleep(200);
    }
    const cancelled = await fetch(`${d.baseUrl}/api/kits/v1/masterings/${id}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.key}` },
    });
    assert.equal(cancelled.status, 200, await cancelled.clone().text());
    const record = (await cancelled.json()) as Record<string, unknown>;
    assert.equal(record.status, "cancelled");
    assert.equal(record.outputFileUrl, null);
    await sleep(3000);
    const storage = createStorage(loadConfig(d.env));
    assert.deepEqual(await storage.list(`outputs/mastering/${id}/`), []);
    assert.equal((await d.prisma.masteringJob.findUniqueOrThrow({ where: { id } })).status, "cancelled");
  });
});
