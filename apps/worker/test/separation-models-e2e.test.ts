import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { SMALL, writeTestModel } from "../../../packages/separation/test/support/mdx-test-models.ts";
import { decodeFloat, download, makeSong, postForm, startDeployment, waitForEnd, type Deployment } from "./harness.ts";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const SIX = [
  { name: "drums", gain: 0.1 },
  { name: "bass", gain: 0.2 },
  { name: "other", gain: 0.3 },
  { name: "vocals", gain: 0.25 },
  { name: "guitar", gain: 0.05 },
  { name: "piano", gain: 0.1 },
];

const rms = (x: Float32Array) => Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length);

function snrDb(reference: Float32Array, estimate: Float32Array): number {
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < Math.min(reference.length, estimate.length); i++) {
    signal += reference[i]! ** 2;
    noise += (reference[i]! - estimate[i]!) ** 2;
  }
  return 10 * Math.log10(signal / Math.max(noise, 1e-20));
}

describe("separation jobs run with the model they chose", () => {
  let d: Deployment;
  let modelsDir: string;
  before(async () => {
    modelsDir = await mkdtemp(join(tmpdir(), "mixdown-worker-models-"));
    const repoModels = resolve(repoRoot, "models");
    for (const f of ["vocals.json", "vocals.onnx", "stems.json", "stems.onnx"])
      await copyFile(join(repoModels, f), join(modelsDir, f));
    // A 6-stem model whose every stem is the mixture times a known gain, so each output is recognisable.
    await writeTestModel(modelsDir, { ...SMALL, name: "six", stems: SIX });
    d = await startDeployment({ MODELS_DIR: modelsDir });
  });
  after(async () => {
    await d?.stop();
    await rm(modelsDir, { recursive: true, force: true });
  });

  it("a vocal separation naming the stems model is served by it: vocals and backing that add up to the input, unsplit when no vocal-split model is installed", async () => {
    const path = await makeSong("song.wav", 4);
    const created = await postForm(d, "vocal-separations", { inputFile: { path }, model: "stems" });
    assert.equal(created.status, 200, await created.clone().text());
    const done = await waitForEnd(d, `vocal-separations/${((await created.json()) as { id: number }).id}`);
    assert.equal(done.status, "success", done.errorMessage);
    assert.equal(done.model, "stems");
    assert.deepEqual(
      done.stemFileUrls.map((s: { instrument: string }) => s.instrument),
      ["vocals", "backing"],
    );
    const [vocals, backing, input] = await Promise.all([
      download(done.vocalAudioFileUrl).then(decodeFloat),
      download(done.backingAudioFileUrl).then(decodeFloat),
      decodeFloat(path),
    ]);
    const sum = vocals.map((v, i) => v + backing[i]!);
    assert.ok(snrDb(input, sum) > 40, "vocals + backing = input");
    // The stems model's vocals differ from the vocals model's: the job did not fall back to the setting.
    const viaSetting = await postForm(d, "vocal-separations", { inputFile: { path } });
    const other = await waitForEnd(d, `vocal-separations/${((await viaSetting.json()) as { id: number }).id}`);
    assert.equal(other.status, "success", other.errorMessage);
    assert.equal(other.model, "vocals", "a job naming no model records the setting's model once it succeeded");
    const settingVocals = await download(other.vocalAudioFileUrl).then(decodeFloat);
    assert.ok(snrDb(settingVocals, vocals) < 30, "the two models' vocals are not the same audio");
  });

  it("a stem split served by a 6-stem model publishes all six stems, and vocals and backing", async () => {
    const path = await makeSong("split.wav", 3);
    const created = await postForm(d, "stem-splits", { inputFile: { path }, model: "six" });
    assert.equal(created.status, 200, await created.clone().text());
    const done = await waitForEnd(d, `stem-splits/${((await created.json()) as { id: number }).id}`);
    assert.equal(done.status, "success", done.errorMessage);
    assert.equal(done.model, "six");
    const names = SIX.map((s) => s.name);
    assert.deepEqual(
      done.stemFileUrls.map((s: { instrument: string }) => s.instrument),
      names,
    );
    assert.deepEqual(
      done.lossyStemFileUrls.map((s: { instrument: string }) => s.instrument),
      names,
    );
    assert.ok(done.vocalAudioFileUrl && done.backingAudioFileUrl && done.lossyVocalAudioFileUrl);
    const stems = await Promise.all(done.stemFileUrls.map((s: { url: string }) => download(s.url).then(decodeFloat)));
    const level = stems.map(rms);
    for (let i = 1; i < SIX.length; i++) {
      const ratio = level[i]! / level[0]!;
      const expected = SIX[i]!.gain / SIX[0]!.gain;
      assert.ok(Math.abs(ratio / expected - 1) < 0.05, `${SIX[i]!.name}: level ratio ${ratio}, expected ${expected}`);
    }
  });

  for (const [setting, value, message] of [
    [
      "SEPARATION_MODEL_VOCALS",
      "htdemucs",
      /SEPARATION_MODEL_VOCALS="htdemucs": no such separation model in .* \(installed: six, stems, vocals\)/,
    ],
    [
      "SEPARATION_MODEL_STEMS",
      "vocals",
      /SEPARATION_MODEL_STEMS="vocals": the model \(stems: vocals\) cannot serve a stem-split \(models that can: six, stems\)/,
    ],
  ] as const) {
    it(`refuses to start when ${setting} names ${value === "vocals" ? "a model that cannot serve its kind" : "a missing model"}`, async () => {
      const child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "apps/worker/src/main.ts")], {
        cwd: repoRoot,
        env: { ...process.env, ...d.env, WORKER_HEALTH_PORT: "0", LOG_LEVEL: "info", [setting]: value },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout.on("data", (b: Buffer) => (output += b));
      child.stderr.on("data", (b: Buffer) => (output += b));
      const code = await new Promise<number | null>((r) => child.on("exit", (c) => r(c)));
      assert.equal(code, 1, output);
      const fatal = output
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as { msg: string; err?: string })
        .find((entry) => entry.msg === "worker could not start");
      assert.ok(fatal, output);
      assert.match(fatal.err ?? "", message);
    });
  }
});
