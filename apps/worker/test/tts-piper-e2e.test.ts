import assert from "node:assert/strict";
import { copyFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { registerVoiceCatalogue } from "@mixdown/db";
import { testFilesDir } from "@mixdown/devstack";
import { writeContentVecSignatureModel } from "@mixdown/voice";
import { catalogueRows } from "@mixdown/voice/catalogue";
import { download, postJson, probe, startDeployment, waitForEnd, type Deployment } from "../testing/harness.ts";

// The random-weight Piper voice of packages/voice/test/fixtures/piper, installed as `models pull`
// installs one: its .onnx and .onnx.json in TTS_PIPER_DIR.
const fixture = fileURLToPath(new URL("../../../packages/voice/test/fixtures/piper/tiny-en_US.onnx", import.meta.url));

describe("text-to-speech with a Piper voice installed", () => {
  let d: Deployment;
  let aria: number;
  before(async () => {
    const models = await testFilesDir("tts-piper-");
    await writeFile(join(models, "contentvec.onnx"), writeContentVecSignatureModel());
    const piperDir = join(models, "tts");
    await mkdir(piperDir);
    await copyFile(fixture, join(piperDir, "tiny-en_US.onnx"));
    await copyFile(`${fixture}.json`, join(piperDir, "tiny-en_US.onnx.json"));
    d = await startDeployment({
      WORKER_QUEUES: "tts",
      VOICE_CONTENTVEC_MODEL: join(models, "contentvec.onnx"),
      TTS_PIPER_DIR: piperDir,
    });
    await registerVoiceCatalogue(d.prisma, await catalogueRows(d.env.MODELS_DIR!));
    aria = (await d.prisma.voiceModel.findUniqueOrThrow({ where: { slug: "native-aria" } })).id;
  });
  after(async () => {
    await d?.stop();
  });

  const tts = (body: Record<string, unknown>) => postJson(d, "tts", body);

  it("English goes to the Piper voice (auto), sentence by sentence, then through the voice model; German, which no Piper voice here speaks, to espeak-ng", async () => {
    const created = await tts({ voiceModelId: aria, inputTtsText: "Hello, world! How are you today? Fine." });
    assert.equal(created.status, 201, await created.clone().text());
    const done = await waitForEnd(d, `tts/${((await created.json()) as any).id}`, 120_000);
    assert.equal(done.status, "success", done.errorMessage);
    assert.equal(done.synthesizer, "piper:tiny-en_US");
    assert.equal(done.progress, 100);
    const info = await probe(await download(done.outputFileUrl));
    assert.equal(info.sampleRate, 44100, "converted at the voice model's rate");
    // Three sentences, each with its 0.2 s of silence after it.
    assert.ok(info.duration > 0.6, `${info.duration.toFixed(2)} s`);

    const german = await tts({ voiceModelId: aria, inputTtsText: "Guten Morgen!", language: "de" });
    assert.equal(german.status, 201, await german.clone().text());
    const spoken = await waitForEnd(d, `tts/${((await german.json()) as any).id}`, 120_000);
    assert.equal(spoken.status, "success", spoken.errorMessage);
    assert.equal(spoken.synthesizer, "espeak-ng");
  });
});
