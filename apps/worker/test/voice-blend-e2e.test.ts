import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { ort } from "@mixdown/separation/ort";
import { loadConfig } from "@mixdown/config";
import { registerVoiceCatalogue } from "@mixdown/db";
import { makeSyntheticVoice, syntheticInputs } from "@mixdown/onnx-blend/testing";
import { createStorage, type ObjectStorage } from "@mixdown/storage";
import { writeContentVecSignatureModel } from "@mixdown/voice";
import { catalogueRows } from "@mixdown/voice/catalogue";
import { decodeFloat, download, getJson, probe, startDeployment, waitForEnd, type Deployment } from "../testing/harness.ts";

const run = promisify(execFile);

const meta = { "mixdown.architecture": "rvc" };

async function runModel(bytes: Uint8Array): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(bytes);
  try {
    const feeds = Object.fromEntries(
      Object.entries(syntheticInputs(16)).map(([name, { data, dims }]) => [
        name,
        new ort.Tensor(data instanceof BigInt64Array ? "int64" : "float32", data, dims),
      ]),
    );
    return (await session.run(feeds)).audio!.data as Float32Array;
  } finally {
    await session.release();
  }
}

describe("voice blend jobs through the API and the worker", () => {
  let d: Deployment;
  let storage: ObjectStorage;
  let callerId: number;
  let dir: string;

  /** A ready RVC voice model row whose file is in storage, as an upload would leave it. */
  async function addModel(title: string, bytes: Uint8Array, owner: "me" | "public") {
    const row = await d.prisma.voiceModel.create({
      data: {
        title,
        architecture: "rvc",
        sampleRate: 40000,
        ownerId: owner === "me" ? callerId : null,
        metadata: { f0: true, indexKey: "voice-models/x/added.index" },
      },
    });
    const key = `voice-models/${row.id}/model.onnx`;
    const path = join(dir, `${row.id}.onnx`);
    await import("node:fs/promises").then((fs) => fs.writeFile(path, bytes));
    await storage.putFile(key, path);
    await d.prisma.voiceModel.update({ where: { id: row.id }, data: { fileKey: key } });
    return row.id;
  }

  const blend = (body: object) =>
    fetch(`${d.baseUrl}/api/kits/v1/voice-blender`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "voice-blend-e2e-"));
    // Conversions of native voices never load ContentVec; the pool only needs a file to point at.
    await writeFile(join(dir, "contentvec.onnx"), writeContentVecSignatureModel());
    d = await startDeployment({
      WORKER_QUEUES: "voice-blend,voice-conversion",
      VOICE_CONTENTVEC_MODEL: join(dir, "contentvec.onnx"),
    });
    storage = createStorage(loadConfig(d.env));
    callerId = (await d.prisma.apiKey.findFirstOrThrow({ where: { name: "e2e" } })).callerId;
    // The default native voices, as the API and the worker register them at start.
    await registerVoiceCatalogue(d.prisma, await catalogueRows(d.env.MODELS_DIR!));
  });
  after(async () => {
    await storage?.close();
    await d?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("blends a public and a private RVC model 50/50: job success, output model ready, its file loads and runs in onnxruntime-node", async () => {
    const a = makeSyntheticVoice({ seed: 11, speakers: 109, metadata: meta });
    const b = makeSyntheticVoice({ seed: 12, speakers: 1, metadata: meta });
    const publicId = await addModel("Catalogue Alto", a, "public");
    const mineId = await addModel("My Tenor", b, "me");

    const res = await blend({ modelId1: publicId, modelId2: mineId, alpha: 0.5 });
    assert.equal(res.status, 201, await res.clone().text());
    const created = (await res.json()) as any;
    assert.equal(created.status, "running");
    assert.equal(created.alpha2, 0.5);
    const pending = await getJson(d, `voice-models/${created.outputModelId}`);
    assert.equal(pending.usable, false);

    const done = await waitForEnd(d, `voice-blender/${created.id}`, 30_000);
    assert.equal(done.status, "success", done.errorMessage);
    assert.match(done.jobEndTime, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} \+00:00$/);
    // A blend processes no audio: it counts as one job of 0 seconds.
    const usage = await d.prisma.usageRecord.findMany({ where: { jobKind: "voice_blend", rowId: created.id } });
    assert.deepEqual(
      usage.map((u) => u.seconds),
      [0],
    );
    const model = await getJson(d, `voice-models/${created.outputModelId}`);
    assert.equal(model.state, "ready");
    assert.equal(model.usable, true);
    assert.equal(model.isUsable, true);
    assert.equal(model.architecture, "rvc");
    assert.equal(model.sampleRate, 40000);
    assert.equal(model.title, "Blend of Catalogue Alto and My Tenor");

    const row = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id: created.outputModelId } });
    assert.equal(row.fileKey, `voice-models/${created.outputModelId}/model.onnx`);
    assert.equal(row.ownerId, callerId);
    const metadata = row.metadata as Record<string, any>;
    assert.equal(metadata.f0, true, "model 1's parameters carry over");
    assert.equal(metadata.indexKey, undefined, "model 1's own files do not");
    assert.deepEqual(metadata.blend.modelIds, [publicId, mineId]);
    assert.deepEqual(metadata.blend.truncated, [{ name: "emb_g.weight", rows: 1 }]);

    const local = join(dir, "blended.onnx");
    await storage.downloadToFile(row.fileKey!, local);
    const blended = await readFile(local);
    const [ya, yb, ym] = [await runModel(a), await runModel(b), await runModel(blended)];
    assert.equal(ym.length, ya.length);
    assert.ok(ym.every(Number.isFinite));
    assert.notDeepEqual(ym, ya);
    assert.notDeepEqual(ym, yb);
  });

  it("alpha 1 stores a bit-exact copy of the first model", async () => {
    const a = makeSyntheticVoice({ seed: 21, metadata: meta });
    const first = await addModel("First", a, "me");
    const second = await addModel("Second", makeSyntheticVoice({ seed: 22, metadata: meta }), "public");
    const created: any = await (await blend({ modelId1: first, modelId2: second, alpha: 1, title: "Copy" })).json();
    const done = await waitForEnd(d, `voice-blender/${created.id}`, 30_000);
    assert.equal(done.status, "success", done.errorMessage);
    const local = join(dir, "copy.onnx");
    await storage.downloadToFile(`voice-models/${created.outputModelId}/model.onnx`, local);
    assert.ok((await readFile(local)).equals(Buffer.from(a)));
  });

  it("models whose weights do not match end the job as error with the reason, and the output model failed", async () => {
    const good = await addModel("Good", makeSyntheticVoice({ seed: 31, metadata: meta }), "me");
    const odd = await addModel(
      "Odd",
      makeSyntheticVoice({ seed: 32, metadata: meta, reshape: { name: "enc_p.emb_phone.weight", dims: [256, 192] } }),
      "me",
    );
    const created: any = await (await blend({ modelId1: good, modelId2: odd, alpha: 0.4 })).json();
    const done = await waitForEnd(d, `voice-blender/${created.id}`, 30_000);
    assert.equal(done.status, "error");
    assert.match(
      done.errorMessage,
      new RegExp(
        `cannot be blended: enc_p\\.emb_phone\\.weight has shape \\[256, 192\\] in voice model ${odd} but \\[768, 192\\] in voice model ${good}`,
      ),
    );
    assert.ok(done.jobEndTime);
    const model = await getJson(d, `voice-models/${created.outputModelId}`);
    assert.equal(model.state, "failed");
    assert.equal(model.usable, false);
    assert.equal(await storage.exists(`voice-models/${created.outputModelId}/model.onnx`), false);
    assert.equal(
      await d.prisma.usageRecord.count({ where: { jobKind: "voice_blend", rowId: created.id } }),
      0,
      "a failed blend counts nothing",
    );
  });

  it("a 50/50 blend of two default native voices is usable at once: a conversion with it succeeds, keeping rate and length", async () => {
    const [flint, lumen] = await Promise.all(
      ["native-flint", "native-lumen"].map(async (slug) => (await d.prisma.voiceModel.findUniqueOrThrow({ where: { slug } })).id),
    );
    const res = await blend({ modelId1: flint, modelId2: lumen, alpha: 0.5, title: "Flint and Lumen" });
    assert.equal(res.status, 201, await res.clone().text());
    const created = (await res.json()) as any;
    const done = await waitForEnd(d, `voice-blender/${created.id}`, 30_000);
    assert.equal(done.status, "success", done.errorMessage);
    const model = await getJson(d, `voice-models/${created.outputModelId}`);
    assert.equal(model.state, "ready");
    assert.equal(model.usable, true);
    assert.equal(model.architecture, "native");
    assert.equal(model.sampleRate, 44100);
    assert.equal(model.public, false);

    // Held-out espeak-ng speech (a voice that built no default voice), at 48 kHz.
    const raw = join(dir, "speech-raw.wav");
    await run("espeak-ng", ["-v", "en+m1", "-s", "150", "-w", raw, "Turn the page slowly and listen to the rain."]);
    const input = join(dir, "speech.wav");
    await run("ffmpeg", ["-v", "error", "-y", "-i", raw, "-ar", "48000", input]);
    const form = new FormData();
    form.append("voiceModelId", String(created.outputModelId));
    form.append("soundFile", new Blob([await readFile(input)]), "speech.wav");
    form.append("conversionStrength", "1");
    form.append("modelVolumeMix", "0");
    form.append("pitchShift", "2");
    const converted = await fetch(`${d.baseUrl}/api/kits/v1/voice-conversions`, {
      method: "POST",
      body: form,
      headers: { authorization: `Bearer ${d.key}` },
    });
    assert.equal(converted.status, 201, await converted.clone().text());
    const job = (await converted.json()) as any;
    assert.equal(job.voiceModelId, created.outputModelId);

    const finished = await waitForEnd(d, `voice-conversions/${job.id}`, 60_000);
    assert.equal(finished.status, "success", finished.errorMessage);
    assert.equal(finished.model.id, created.outputModelId);
    const outPath = await download(finished.outputFileUrl);
    const [source, out] = [await probe(input), await probe(outPath)];
    assert.equal(out.sampleRate, 48000);
    assert.equal(out.samples, source.samples, "the output has the input's length to the sample");
    const pcm = await decodeFloat(outPath);
    const rms = Math.sqrt(pcm.reduce((s, v) => s + v * v, 0) / pcm.length);
    assert.ok(pcm.every(Number.isFinite) && rms > 0.01, `the converted speech is audible (rms ${rms.toFixed(4)})`);
  });
});
