import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { registerVoiceCatalogue } from "@mixdown/db";
import { testFilesDir } from "@mixdown/devstack";
import { monoBlocks, trackPitch, writeContentVecSignatureModel, writeRvcSignatureModel } from "@mixdown/voice";
import { catalogueRows } from "@mixdown/voice/catalogue";
import { bullJobId } from "@mixdown/queue";
import {
  download,
  getJson,
  postForm,
  postJson,
  probe,
  startDeployment,
  waitForEnd,
  waitForQueueEntryEnd,
  type Deployment,
} from "../testing/harness.ts";

const run = promisify(execFile);

/** Share of 10 ms frames (read at 16 kHz) where YIN finds a pitch: speech has many, silence or noise none. */
async function voicedShare(path: string): Promise<number> {
  const parts: number[] = [];
  for await (const block of monoBlocks(path, 16000)) for (const v of block) parts.push(v);
  const f0 = trackPitch(Float32Array.from(parts), 16000, { hop: 160 });
  return f0.filter((v) => v > 0).length / f0.length;
}

describe("text-to-speech jobs through the API and the worker", () => {
  let d: Deployment;
  let aria: number;
  let flint: number;
  before(async () => {
    const models = await testFilesDir("tts-models-");
    await writeFile(join(models, "contentvec.onnx"), writeContentVecSignatureModel());
    d = await startDeployment({
      // Not voice-model-media: the catalogue's demo renders would share the one conversion thread with the TTS jobs.
      WORKER_QUEUES: "tts,voice-blend,webhook-delivery",
      VOICE_CONTENTVEC_MODEL: join(models, "contentvec.onnx"),
    });
    await registerVoiceCatalogue(d.prisma, await catalogueRows(d.env.MODELS_DIR!));
    aria = (await d.prisma.voiceModel.findUniqueOrThrow({ where: { slug: "native-aria" } })).id;
    flint = (await d.prisma.voiceModel.findUniqueOrThrow({ where: { slug: "native-flint" } })).id;
  });
  after(async () => {
    await d?.stop();
  });

  const tts = (body: Record<string, unknown>) => postJson(d, "tts", body);

  it("speaks a text with Festival's HTS voice and converts it with a native voice: success, wav and mp3 at the model's rate, speech in them", async () => {
    const text = "Every voice has a story. This one was typed, spoken by a synthesizer, and sung back in another voice!";
    const created = await tts({ voiceModelId: aria, inputTtsText: text });
    assert.equal(created.status, 201, await created.clone().text());
    const job = (await created.json()) as any;
    assert.equal(job.type, "tts");
    assert.equal(job.status, "running");

    const done = await waitForEnd(d, `tts/${job.id}`, 120_000);
    assert.equal(done.status, "success", done.errorMessage);
    assert.equal(done.type, "tts");
    assert.equal(done.progress, 100);
    assert.equal(done.synthesizer, "festival");
    assert.equal(done.model.id, aria);
    assert.match(done.jobEndTime, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} \+00:00$/);
    assert.match(done.outputFileUrl, /outputs\/tts\/\d+\/output\.wav/);
    assert.match(done.lossyOutputFileUrl, /outputs\/tts\/\d+\/output\.mp3/);

    const wav = await download(done.outputFileUrl);
    const info = await probe(wav);
    assert.equal(info.sampleRate, 44100, "spoken at the voice model's rate");
    const seconds = info.duration;
    assert.ok(seconds > 4 && seconds < 15, `${seconds.toFixed(2)} s for two sentences`);
    const voiced = await voicedShare(wav);
    assert.ok(voiced > 0.3, `${(voiced * 100).toFixed(0)}% of the frames are voiced: speech, not silence or noise`);
    assert.equal((await probe(await download(done.lossyOutputFileUrl))).codec, "mp3");
    // The job counts once in its key's usage, the spoken output's length (not the create's estimate).
    const usage = await d.prisma.usageRecord.findMany({ where: { jobKind: "tts", rowId: job.id } });
    assert.equal(usage.length, 1);
    assert.ok(Math.abs(usage[0]!.seconds - seconds) < 0.01, `${usage[0]!.seconds} s counted, ${seconds} s spoken`);
  });

  it("converts through an RVC model and through a blend's output model, as a voice conversion would", async () => {
    const dir = await testFilesDir("tts-");
    const rvcFile = join(dir, "rvc.onnx");
    await writeFile(rvcFile, writeRvcSignatureModel(40000));
    const imported = await postForm(d, "voice-models", {
      metadata: JSON.stringify({ title: "My RVC", sampleRate: 40000 }),
      modelFile: { path: rvcFile },
    });
    assert.equal(imported.status, 201, await imported.clone().text());
    const rvc = ((await imported.json()) as any).id;

    const blendRes = await fetch(`${d.baseUrl}/api/kits/v1/voice-blender`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.key}`, "content-type": "application/json" },
      body: JSON.stringify({ modelId1: aria, modelId2: flint, alpha: 0.5, title: "Aria and Flint" }),
    });
    assert.equal(blendRes.status, 201, await blendRes.clone().text());
    const blend = (await blendRes.json()) as any;
    assert.equal((await waitForEnd(d, `voice-blender/${blend.id}`, 60_000)).status, "success");

    for (const [modelId, rate] of [
      [rvc, 40000],
      [blend.outputModelId, 44100],
    ] as const) {
      const created = await tts({ voiceModelId: modelId, inputTtsText: "Turn the page slowly, and listen to the rain." });
      assert.equal(created.status, 201, await created.clone().text());
      const done = await waitForEnd(d, `tts/${((await created.json()) as any).id}`, 120_000);
      assert.equal(done.status, "success", done.errorMessage);
      assert.equal(done.voiceModelId, modelId);
      const info = await probe(await download(done.outputFileUrl));
      assert.equal(info.sampleRate, rate);
      assert.ok(info.duration > 1.5, "a sentence of speech");
    }
  });

  it("a long text is spoken sentence by sentence into one output as long as its parts", async () => {
    const sentences = Array.from({ length: 14 }, (_, i) => `This is sentence number ${i + 1}, spoken in its turn.`);
    const text = sentences.join(" ");
    assert.ok(text.length > 600, "longer than one of the synthesizer's 600-character pieces");
    const created = await tts({ voiceModelId: aria, inputTtsText: text });
    assert.equal(created.status, 201, await created.clone().text());
    const done = await waitForEnd(d, `tts/${((await created.json()) as any).id}`, 480_000);
    assert.equal(done.status, "success", done.errorMessage);
    const info = await probe(await download(done.outputFileUrl));
    const seconds = info.duration;
    // About 2.5 s per sentence: every piece made it into the output.
    assert.ok(seconds > 14 * 1.8 && seconds < 14 * 4, `${seconds.toFixed(1)} s for 14 sentences`);
  });

  it("language: German is spoken by espeak-ng's German voice and converted; a row in a language this worker lacks ends error at once, naming what it has", async () => {
    const created = await tts({ voiceModelId: aria, inputTtsText: "Der Zug nach Wien fährt um sieben Uhr.", language: "DE" });
    assert.equal(created.status, 201, await created.clone().text());
    const job = (await created.json()) as any;
    assert.equal(job.language, "de");
    const done = await waitForEnd(d, `tts/${job.id}`, 120_000);
    assert.equal(done.status, "success", done.errorMessage);
    assert.equal(done.synthesizer, "espeak-ng");
    assert.equal(done.language, "de");
    assert.ok((await probe(await download(done.outputFileUrl))).duration > 1.5, "a sentence of speech");

    // The API checks the language against its own machine; a worker elsewhere may have fewer voices.
    const row = await d.prisma.ttsJob.create({
      data: {
        callerId: (await d.prisma.ttsJob.findUniqueOrThrow({ where: { id: job.id } })).callerId,
        voiceModelId: aria,
        inputText: "Hello.",
        language: "tlh",
        enqueuedAt: new Date(),
      },
    });
    await d.api.ctx.queues.enqueue({ queue: "tts", payload: { jobId: row.id } });
    const refused = await waitForEnd(d, `tts/${row.id}`, 60_000);
    assert.equal(refused.status, "error");
    assert.match(refused.errorMessage, /language "tlh" is not one this server speaks; available: .*\bde\b/);
    const entry = await waitForQueueEntryEnd(d.api.ctx.queues.queue("tts"), bullJobId("tts", row.id));
    assert.equal(entry.attemptsMade, 1, "not retried: no attempt can speak a language the worker lacks");
  });

  it("a Python requests client posts form fields (data= and files=), polls GET /tts/:id and downloads the speech", async (t) => {
    const python = await run("python3", ["-c", "import requests"]).then(
      () => true,
      () => false,
    );
    if (!python) return t.skip("python3 with requests is not installed here");
    const dir = await testFilesDir("tts-py-");
    const script = `
import sys, time, requests
base, key, model, out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
headers = {"Authorization": "Bearer " + key}
sent = [
    requests.post(base + "/api/kits/v1/tts", headers=headers, data={"voiceModelId": model, "inputTtsText": "Hello from Python. This is my voice."}),
    requests.post(base + "/api/kits/v1/tts", headers=headers, files={"voiceModelId": (None, model), "inputTtsText": (None, "And a second job, sent as a multipart form.")}),
]
for i, r in enumerate(sent):
    assert r.status_code == 201, r.text
    job = r.json()
    assert job["type"] == "tts" and job["status"] == "running", job
    deadline = time.time() + 120
    while job["status"] == "running":
        assert time.time() < deadline, "still running"
        time.sleep(0.5)
        job = requests.get(base + "/api/kits/v1/tts/" + str(job["id"]), headers=headers).json()
    assert job["status"] == "success", job
    audio = requests.get(job["outputFileUrl"])
    assert audio.status_code == 200
    with open(out + str(i) + ".wav", "wb") as f:
        f.write(audio.content)
    print(job["id"], job["synthesizer"], len(audio.content))
`;
    const { stdout } = await run("python3", ["-c", script, d.baseUrl, d.key, String(aria), join(dir, "speech")], {
      timeout: 300_000,
    });
    const lines = stdout.trim().split("\n");
    assert.equal(lines.length, 2, stdout);
    for (const [i, line] of lines.entries()) {
      const [id, synthesizer] = line.split(" ");
      assert.equal(synthesizer, "festival");
      assert.equal((await getJson(d, `tts/${id}`)).status, "success");
      const info = await probe(join(dir, `speech${i}.wav`));
      assert.equal(info.sampleRate, 44100);
      assert.ok(info.duration > 1.5, `job ${id}: ${info.duration} s`);
    }
  });

  it("a webhook tells the job's end, signed; a cancel while it speaks ends it cancelled with nothing stored, and says so", async (t) => {
    const received: Array<{ path: string; event: string; signature: string; body: string }> = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        received.push({
          path: req.url ?? "/",
          event: String(req.headers["mixdown-event"]),
          signature: String(req.headers["mixdown-signature"]),
          body: Buffer.concat(chunks).toString("utf8"),
        });
        res.writeHead(200).end("ok");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const hook = (path: string) => `http://127.0.0.1:${(server.address() as { port: number }).port}${path}`;
    const delivery = async (path: string, timeoutMs = 120_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = received.find((r) => r.path === path);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no webhook at ${path} after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    const secret = (await d.prisma.apiKey.findFirstOrThrow({ where: { name: "e2e" } })).webhookSecret;

    const done = (await (
      await tts({ voiceModelId: aria, inputTtsText: "Tell me when it is done.", webhookUrl: hook("/done") })
    ).json()) as any;
    const told = await delivery("/done");
    assert.equal(told.event, "job.success");
    const record = JSON.parse(told.body);
    assert.equal(record.id, done.id);
    assert.equal(record.type, "tts");
    assert.equal(record.status, "success");
    assert.match(record.outputFileUrl, /outputs\/tts\//);
    const [, ts, mac] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(told.signature) ?? [];
    assert.equal(
      mac,
      createHmac("sha256", secret).update(`${ts}.${told.body}`).digest("hex"),
      "signed with the key's webhook secret",
    );

    const long = Array.from({ length: 30 }, (_, i) => `Sentence ${i + 1} takes its time to be spoken.`).join(" ");
    const job = (await (await tts({ voiceModelId: aria, inputTtsText: long, webhookUrl: hook("/cancelled") })).json()) as any;
    const deadline = Date.now() + 120_000;
    while ((await getJson(d, `tts/${job.id}`)).progress < 1) {
      assert.ok(Date.now() < deadline, "the job never started");
      await new Promise((r) => setTimeout(r, 100));
    }
    const cancelled = await fetch(`${d.baseUrl}/api/kits/v1/tts/${job.id}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.key}` },
    });
    assert.equal(cancelled.status, 200, await cancelled.clone().text());
    assert.equal(((await cancelled.json()) as any).status, "cancelled");
    assert.equal((await delivery("/cancelled")).event, "job.cancelled");
    // The worker stops within seconds and publishes nothing; the row stays cancelled.
    await new Promise((r) => setTimeout(r, 5_000));
    const row = await d.prisma.ttsJob.findUniqueOrThrow({ where: { id: job.id } });
    assert.equal(row.status, "cancelled");
    assert.equal(row.outputKey, null);
    assert.deepEqual(await d.api.ctx.storage.list(`outputs/tts/${job.id}/`), []);
  });
});
