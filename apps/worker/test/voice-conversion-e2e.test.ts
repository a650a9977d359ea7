import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { registerVoiceCatalogue } from "@mixdown/db";
import { testFilesDir } from "@mixdown/devstack";
import { ensurePyTorch } from "@mixdown/python";
import { catalogueRows } from "@mixdown/voice/catalogue";
import {
  contourShiftSemitones,
  monoBlocks,
  trackPitch,
  writeContentVecSignatureModel,
  writeRvcSignatureModel,
} from "@mixdown/voice";
import {
  download,
  postForm,
  probe,
  startDeployment,
  waitForEnd,
  waitForQueueEntryEnd,
  type Deployment,
} from "../testing/harness.ts";

// Debian's PyTorch for the fixtures' checks, as the worker gets it: installed here when missing, never skipped.
const torchPython = await ensurePyTorch(() => {});

const run = promisify(execFile);

async function speech(voice: string, text: string, outputArgs: string[] = []): Promise<string> {
  const dir = await testFilesDir("vc-");
  const raw = join(dir, "raw.wav");
  await run("espeak-ng", ["-v", voice, "-s", "150", "-w", raw, text]);
  const path = join(dir, "speech.wav");
  await run("ffmpeg", ["-v", "error", "-y", "-i", raw, ...outputArgs, path]);
  return path;
}

/** f0 contour (YIN, 10 ms frames) of a file, read at 16 kHz. */
async function f0Of(path: string): Promise<Float32Array> {
  const parts: number[] = [];
  for await (const block of monoBlocks(path, 16000)) for (const v of block) parts.push(v);
  return trackPitch(Float32Array.from(parts), 16000, { hop: 160 });
}

const post = postForm;

describe("voice conversion jobs through the API and the worker", () => {
  let d: Deployment;
  let aria: number;
  let models: string;
  before(async () => {
    models = await testFilesDir("vc-models-");
    await writeFile(join(models, "contentvec.onnx"), writeContentVecSignatureModel());
    d = await startDeployment({
      WORKER_QUEUES: "voice-conversion,voice-model-build,voice-blend",
      VOICE_CONTENTVEC_MODEL: join(models, "contentvec.onnx"),
    });
    await registerVoiceCatalogue(d.prisma, await catalogueRows(d.env.MODELS_DIR!));
    aria = (await d.prisma.voiceModel.findUniqueOrThrow({ where: { slug: "native-aria" } })).id;
  });
  after(async () => {
    await d?.stop();
  });

  it("converts a 48 kHz upload to a default voice with pitch shift, post effects and a backing track", async () => {
    const input = await speech("en+m1", "Music is the space between the notes, and the breath between the words.", [
      "-ar",
      "48000",
    ]);
    const backing = join(await testFilesDir("vc-"), "backing.mp3");
    await run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=220:d=3", "-ar", "44100", backing]);
    const created = await post(d, "voice-conversions", {
      voiceModelId: String(aria),
      soundFile: { path: input },
      backingSoundFile: { path: backing },
      conversionStrength: "1",
      modelVolumeMix: "0.3",
      pitchShift: "4",
      pre: JSON.stringify({ highPassFilter: { cutoff_frequency_hz: 60 } }),
      post: JSON.stringify({ reverb: { room_size: 0.3, wet_level: 0.1 } }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    const job = (await created.json()) as any;
    assert.equal(job.status, "running");
    assert.equal(job.voiceModelId, aria);

    const done = await waitForEnd(d, `voice-conversions/${job.id}`, 120_000);
    assert.equal(done.status, "success", done.errorMessage);
    assert.equal(done.model.id, aria);
    assert.match(done.outputFileUrl, /output\.wav/);
    assert.match(done.lossyOutputFileUrl, /output\.mp3/);
    assert.ok(done.recombinedAudioFileUrl);

    const source = await probe(input);
    const outPath = await download(done.outputFileUrl);
    const out = await probe(outPath);
    assert.equal(out.sampleRate, 48000);
    assert.equal(out.samples, source.samples, "the lossless output has the input's length to the sample");
    assert.equal((await probe(await download(done.lossyOutputFileUrl))).codec, "mp3");
    const recombined = await probe(await download(done.recombinedAudioFileUrl));
    assert.equal(recombined.sampleRate, 48000);

    const semitones = contourShiftSemitones(await f0Of(input), await f0Of(outPath));
    assert.ok(Math.abs(semitones - 4) < 0.3, `the f0 contour moved ${semitones.toFixed(2)} semitones, expected 4`);
  });

  it("rejects a model file that is not ONNX, or ONNX of an unknown signature, with 422 and stores nothing", async () => {
    const dir = await testFilesDir("vc-");
    const junk = join(dir, "junk.onnx");
    await writeFile(junk, "this is not a model at all, just text");
    const other = join(dir, "other.onnx");
    await writeFile(other, writeContentVecSignatureModel());
    const before = await d.prisma.voiceModel.count();
    const storedBefore = (await d.api.ctx.storage.list("voice-models/")).length;
    for (const [path, pattern] of [
      [junk, /not an ONNX model/],
      [other, /unknown voice model architecture/],
    ] as const) {
      const res = await post(d, "voice-models", { metadata: JSON.stringify({ title: "Nope" }), modelFile: { path } });
      assert.equal(res.status, 422);
      assert.match(((await res.json()) as any).message, pattern);
    }
    assert.equal(await d.prisma.voiceModel.count(), before);
    assert.equal((await d.api.ctx.storage.list("voice-models/")).length, storedBefore);
  });

  /** Polls a voice model until it leaves `pending`. */
  async function waitForBuild(id: number, timeoutMs = 60_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const model: any = await (
        await fetch(`${d.baseUrl}/api/kits/v1/voice-models/${id}`, { headers: { authorization: `Bearer ${d.key}` } })
      ).json();
      if (model.state !== "pending") return model;
      if (Date.now() > deadline) throw new Error(`voice model ${id} is still pending after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it("answers a reference recording with a pending private model that the worker builds into a ready native voice", async () => {
    const reference = await speech(
      "en-us+f4",
      "Every morning she sings a quiet song by the open window of the kitchen, and the birds answer her.",
    );
    const res = await post(d, "voice-models", {
      metadata: JSON.stringify({ title: "From my recording" }),
      referenceFile: { path: reference },
    });
    assert.equal(res.status, 201, await res.clone().text());
    const model = (await res.json()) as any;
    assert.equal(model.architecture, "native");
    assert.equal(model.public, false);
    assert.equal(model.state, "pending");
    assert.equal(model.usable, false);
    const stored = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id: model.id } });
    assert.match(stored.referenceKey ?? "", /^uploads\/voice-models\/.+\.wav$/);

    const built = await waitForBuild(model.id);
    assert.equal(built.state, "ready");
    assert.equal(built.usable, true);
    const row = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id: model.id } });
    assert.equal(row.fileKey, `voice-models/${model.id}/model.onnx`);
    assert.ok(await d.api.ctx.storage.exists(row.fileKey!));
    assert.equal((row.metadata as any).source, "reference");
    assert.ok((row.metadata as any).activeSeconds > 1, "the model was measured from the recording's voiced seconds");
    // The built model's media is queued next, as for any new ready model (just after the row is published).
    const media = () => d.api.ctx.queues.queue("voice-model-media").getJobState(`voice-model-media-${model.id}`);
    const deadline = Date.now() + 30_000;
    while ((await media()) === "unknown" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.notEqual(await media(), "unknown");
  });

  it("ends the build of a reference recording too short to measure a voice as a failed model with the reason, not retried", async () => {
    // 0.15 s is about 13 analysis frames; a build needs 20 with voice in them.
    const blip = join(await testFilesDir("vc-"), "blip.wav");
    await run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=220:r=44100", "-t", "0.15", blip]);
    const res = await post(d, "voice-models", {
      metadata: JSON.stringify({ title: "Too short" }),
      referenceFile: { path: blip },
    });
    assert.equal(res.status, 201, await res.clone().text());
    const model = (await res.json()) as any;
    const ended = await waitForBuild(model.id);
    assert.equal(ended.state, "failed");
    // The reason reaches the client in the record, not only the row.
    assert.match(ended.errorMessage, /^referenceFile: the reference recording has too little voice/);
    const row = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id: model.id } });
    assert.match(row.buildError ?? "", /^referenceFile: the reference recording has too little voice/);
    assert.equal(row.fileKey, null);
    const entry = await waitForQueueEntryEnd(d.api.ctx.queues.queue("voice-model-build"), `voice-model-build-${model.id}`);
    assert.equal(await entry.getState(), "failed");
    assert.equal(entry.attemptsMade, 1, "bad input is not retried");
  });

  it("imports an RVC v2 ONNX of the exact signature and converts through it, keeping length and rate", async () => {
    const dir = await testFilesDir("vc-");
    const rvc = join(dir, "rvc.onnx");
    await writeFile(rvc, writeRvcSignatureModel(40000));
    const imported = await post(d, "voice-models", {
      metadata: JSON.stringify({ title: "My RVC", tags: ["rvc"], sampleRate: 40000 }),
      modelFile: { path: rvc },
    });
    assert.equal(imported.status, 201, await imported.clone().text());
    const model = (await imported.json()) as any;
    assert.equal(model.architecture, "rvc");
    assert.equal(model.sampleRate, 40000);
    const listed: any = await (
      await fetch(`${d.baseUrl}/api/kits/v1/voice-models?myModels=true`, { headers: { authorization: `Bearer ${d.key}` } })
    ).json();
    assert.ok(listed.data.some((m: { id: number }) => m.id === model.id));

    const input = await speech("en+f1", "Turn the page slowly and listen to the rain.", ["-ar", "44100"]);
    const created = await post(d, "voice-conversions", {
      voiceModelId: String(model.id),
      soundFile: { path: input },
      conversionStrength: "1",
      modelVolumeMix: "1",
      pitchShift: "-3",
    });
    assert.equal(created.status, 201, await created.clone().text());
    const done = await waitForEnd(d, `voice-conversions/${((await created.json()) as any).id}`, 120_000);
    assert.equal(done.status, "success", done.errorMessage);
    const outPath = await download(done.outputFileUrl);
    const [src, out] = [await probe(input), await probe(outPath)];
    assert.equal(out.sampleRate, 44100);
    assert.equal(out.samples, src.samples);
    // The signature model sings a sine at pitchf: the shift reached the model's f0 input.
    const semitones = contourShiftSemitones(await f0Of(input), await f0Of(outPath));
    assert.ok(Math.abs(semitones + 3) < 0.3, `the f0 contour moved ${semitones.toFixed(2)} semitones, expected -3`);
  });

  const fixture = (path: string) => fileURLToPath(new URL(`../../../packages/voice/test/fixtures/${path}`, import.meta.url));

  it("imports an RVC .pth with its .index: pending, converted by the build job, ready; converts with every control; blends with another imported .pth; a .pth whose weights do not fit ends failed with the reason", async () => {
    const imported = await post(d, "voice-models", {
      metadata: JSON.stringify({ title: "My RVC pth", tags: ["rvc"] }),
      modelFile: { path: fixture("rvc-pth/rvc-v2-48k.pth") },
      indexFile: { path: fixture("rvc-index/ivf-flat-768.index") },
    });
    assert.equal(imported.status, 201, await imported.clone().text());
    const model = (await imported.json()) as any;
    assert.deepEqual([model.architecture, model.sampleRate, model.state], ["rvc", 48000, "pending"]);
    const deadline = Date.now() + 120_000;
    let row = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id: model.id } });
    while (row.state === "pending" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      row = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id: model.id } });
    }
    assert.equal(row.state, "ready", row.buildError ?? "");
    assert.equal(row.fileKey, `voice-models/${model.id}/model.onnx`);
    assert.deepEqual((row.metadata as any).rvc, { version: "v2", f0: 1, sampleRate: 48000, speakers: 3 });
    assert.equal((row.metadata as any).indexKey, `voice-models/${model.id}/model.index`);

    const input = await speech("en+f1", "Turn the page slowly and listen to the rain.", ["-ar", "44100"]);
    const backing = join(await testFilesDir("vc-"), "backing.wav");
    await run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=110:d=4", "-ar", "44100", backing]);
    const created = await post(d, "voice-conversions", {
      voiceModelId: String(model.id),
      soundFile: { path: input },
      backingSoundFile: { path: backing },
      conversionStrength: "0.7",
      modelVolumeMix: "0.5",
      pitchShift: "2",
      pre: JSON.stringify({ noiseGate: { threshold_db: -50 } }),
      post: JSON.stringify({ compressor: { threshold_db: -20, ratio: 3 } }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    const done = await waitForEnd(d, `voice-conversions/${((await created.json()) as any).id}`, 120_000);
    assert.equal(done.status, "success", done.errorMessage);
    const [src, out] = [await probe(input), await probe(await download(done.outputFileUrl))];
    assert.deepEqual([out.sampleRate, out.samples], [44100, src.samples]);
    assert.ok(done.recombinedAudioFileUrl, "the backing track was mixed in");

    // A second model of the same version and rate (the weights scaled), imported and blended with the first.
    const dir = await testFilesDir("vc-");
    const other = join(dir, "other.pth");
    execFileSync(torchPython, [
      "-c",
      "import sys, torch; c = torch.load(sys.argv[1]); c['weight'] = {k: v * 0.9 for k, v in c['weight'].items()}; torch.save(c, sys.argv[2])",
      fixture("rvc-pth/rvc-v2-48k.pth"),
      other,
    ]);
    const second = (await (
      await post(d, "voice-models", { metadata: JSON.stringify({ title: "Other" }), modelFile: { path: other } })
    ).json()) as any;
    let secondRow = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id: second.id } });
    while (secondRow.state === "pending" && Date.now() < deadline + 60_000) {
      await new Promise((r) => setTimeout(r, 500));
      secondRow = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id: second.id } });
    }
    assert.equal(secondRow.state, "ready", secondRow.buildError ?? "");
    const blendRes = await fetch(`${d.baseUrl}/api/kits/v1/voice-blender`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.key}`, "content-type": "application/json" },
      body: JSON.stringify({ modelId1: model.id, modelId2: second.id, alpha: 0.5, title: "Blended pth" }),
    });
    assert.equal(blendRes.status, 201, await blendRes.clone().text());
    const blendJob = (await blendRes.json()) as any;
    const blended = await waitForEnd(d, `voice-blender/${blendJob.id}`, 60_000);
    assert.equal(blended.status, "success", blended.errorMessage);
    const throughBlend = await post(d, "voice-conversions", {
      voiceModelId: String(blendJob.outputModelId),
      soundFile: { path: input },
      pitchShift: "-2",
    });
    assert.equal(throughBlend.status, 201, await throughBlend.clone().text());
    const blendDone = await waitForEnd(d, `voice-conversions/${((await throughBlend.json()) as any).id}`, 120_000);
    assert.equal(blendDone.status, "success", blendDone.errorMessage);

    const broken = join(dir, "broken.pth");
    execFileSync(torchPython, [
      "-c",
      "import sys, torch; c = torch.load(sys.argv[1]); del c['weight']['dec.conv_post.weight']; torch.save(c, sys.argv[2])",
      fixture("rvc-pth/rvc-v2-48k.pth"),
      broken,
    ]);
    const refused = await post(d, "voice-models", {
      metadata: JSON.stringify({ title: "Broken" }),
      modelFile: { path: broken },
    });
    assert.equal(refused.status, 201, await refused.clone().text());
    const failedId = ((await refused.json()) as any).id;
    let failed = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id: failedId } });
    while (failed.state === "pending" && Date.now() < deadline + 60_000) {
      await new Promise((r) => setTimeout(r, 500));
      failed = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id: failedId } });
    }
    assert.equal(failed.state, "failed");
    assert.match(failed.buildError ?? "", /^modelFile: the weights do not fit RVC's synthesizer: missing dec\.conv_post\.weight/);
  });
});
