import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFile, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { SMALL, writeTestModel } from "../../../packages/separation/test/support/mdx-test-models.ts";
import {
  decodeFloat,
  download,
  makeSong,
  postForm,
  snrDb,
  startDeployment,
  stopChild,
  waitForEnd,
  type Deployment,
} from "../testing/harness.ts";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const separationFixtures = join(repoRoot, "packages/separation/test/fixtures");
const SIX = [
  { name: "drums", gain: 0.1 },
  { name: "bass", gain: 0.2 },
  { name: "other", gain: 0.3 },
  { name: "vocals", gain: 0.25 },
  { name: "guitar", gain: 0.05 },
  { name: "piano", gain: 0.1 },
];

const rms = (x: Float32Array) => Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length);

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
    // Two of the other families, as `models import` leaves them (their exactness fixtures).
    for (const f of [
      "htdemucs/htdemucs-tiny.json",
      "htdemucs/htdemucs-tiny.onnx",
      "bs_roformer/bs_roformer.json",
      "bs_roformer/bs_roformer.onnx",
    ])
      await copyFile(join(separationFixtures, f), join(modelsDir, f.split("/")[1]!));
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

  it("a stem split served by an HTDemucs model publishes its four sources, equal to demucs's own to >= 60 dB", async () => {
    const fixture = join(separationFixtures, "htdemucs");
    const created = await postForm(d, "stem-splits", {
      inputFile: { path: join(fixture, "mixture.flac") },
      model: "htdemucs-tiny",
    });
    assert.equal(created.status, 200, await created.clone().text());
    const done = await waitForEnd(d, `stem-splits/${((await created.json()) as { id: number }).id}`);
    assert.equal(done.status, "success", done.errorMessage);
    assert.equal(done.model, "htdemucs-tiny");
    const { gain } = JSON.parse(await readFile(join(fixture, "reference/references.json"), "utf8")) as {
      gain: Record<string, number>;
    };
    assert.deepEqual(
      done.stemFileUrls.map((s: { instrument: string }) => s.instrument),
      Object.keys(gain),
    );
    for (const stem of done.stemFileUrls as { instrument: string; url: string }[]) {
      const reference = (await decodeFloat(join(fixture, `reference/${stem.instrument}.flac`))).map(
        (v) => v / gain[stem.instrument]!,
      );
      const snr = snrDb(reference, await download(stem.url).then(decodeFloat));
      assert.ok(snr >= 60, `${stem.instrument}: ${snr.toFixed(1)} dB`);
    }
  });

  it("a vocal separation served by a BS-RoFormer model gives MSST's vocals to >= 60 dB", async () => {
    const created = await postForm(d, "vocal-separations", {
      inputFile: { path: join(separationFixtures, "msst/mixture.flac") },
      model: "bs_roformer",
    });
    assert.equal(created.status, 200, await created.clone().text());
    const done = await waitForEnd(d, `vocal-separations/${((await created.json()) as { id: number }).id}`);
    assert.equal(done.status, "success", done.errorMessage);
    assert.equal(done.model, "bs_roformer");
    const reference = await decodeFloat(join(separationFixtures, "bs_roformer/reference-vocals.flac"));
    const snr = snrDb(reference, await download(done.vocalAudioFileUrl).then(decodeFloat));
    assert.ok(snr >= 60, `vocals: ${snr.toFixed(1)} dB`);
  });

  it("a worker without the vocal-split model says at start that vocal separations publish vocals and backing only", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "apps/worker/src/main.ts")], {
      cwd: repoRoot,
      env: { ...process.env, ...d.env, WORKER_HEALTH_PORT: "0", LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const warning = await new Promise<{ msg: string; reason: string }>((resolve, reject) => {
        let output = "";
        child.stdout.on("data", (b: Buffer) => {
          output += b;
          for (const line of output.split("\n").filter((l) => l.startsWith("{"))) {
            const entry = JSON.parse(line) as { msg: string; reason: string };
            if (/no vocal split/.test(entry.msg)) resolve(entry);
          }
        });
        child.on("exit", () => reject(new Error(`worker exited: ${output}`)));
      });
      assert.match(warning.reason, /"vocalsplit" \(SEPARATION_MODEL_VOCAL_SPLIT\) is not installed/);
    } finally {
      await stopChild(child, "SIGTERM");
    }
  });

  for (const [setting, value, message] of [
    [
      "SEPARATION_MODEL_VOCALS",
      "htdemucs",
      /SEPARATION_MODEL_VOCALS="htdemucs" with the models in .*: model "htdemucs" is not an installed separation model \(installed: bs_roformer, htdemucs-tiny, six, stems, vocals\)/,
    ],
    [
      "SEPARATION_MODEL_VOCALS",
      "vocals,ghost",
      /SEPARATION_MODEL_VOCALS="vocals,ghost" with the models in .*: model "ghost" is not an installed separation model/,
    ],
    [
      "SEPARATION_MODEL_STEMS",
      "vocals",
      /SEPARATION_MODEL_STEMS="vocals" with the models in .*: model "vocals" \(stems: vocals\) cannot serve a stem-split: it needs a multi-stem model \(installed that can: htdemucs-tiny, six, stems\)/,
    ],
  ] as const) {
    it(`refuses to start when ${setting} names ${value === "vocals" ? "a model that cannot serve its kind" : value.includes(",") ? "an ensemble with a missing model" : "a missing model"}`, async () => {
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

describe("a vocal separation with a vocal-split model installed", () => {
  let d: Deployment;
  let modelsDir: string;
  // Parts that are the whole vocal times known gains: which file is which shows in their levels.
  const SPLIT = [
    { name: "lead", gain: 0.5 },
    { name: "harmony", gain: 0.3 },
    { name: "reverb", gain: 0.2 },
  ];
  before(async () => {
    modelsDir = await mkdtemp(join(tmpdir(), "mixdown-worker-split-models-"));
    const repoModels = resolve(repoRoot, "models");
    for (const f of ["vocals.json", "vocals.onnx", "stems.json", "stems.onnx"])
      await copyFile(join(repoModels, f), join(modelsDir, f));
    await writeTestModel(modelsDir, { ...SMALL, name: "gainsplit", stems: SPLIT });
    d = await startDeployment({ MODELS_DIR: modelsDir, SEPARATION_MODEL_VOCAL_SPLIT: "gainsplit" });
  });
  after(async () => {
    await d?.stop();
    await rm(modelsDir, { recursive: true, force: true });
  });

  // gainsplit runs at SMALL's rate, not the vocals model's: its split is the two-step way (a second
  // run over the written whole vocal, then writeRemainder); separation-e2e covers the one-pass way.
  it("publishes the split's harmony and reverb, and the lead as what they leave of the whole vocal", async () => {
    const path = await makeSong("song.wav", 3);
    const created = await postForm(d, "vocal-separations", { inputFile: { path } });
    assert.equal(created.status, 200, await created.clone().text());
    const done = await waitForEnd(d, `vocal-separations/${((await created.json()) as { id: number }).id}`);
    assert.equal(done.status, "success", done.errorMessage);
    assert.deepEqual(
      done.stemFileUrls.map((s: { instrument: string }) => s.instrument),
      ["vocals", "harmony", "reverb", "backing"],
    );
    const [lead, harmony, reverb, backing] = await Promise.all(
      done.stemFileUrls.map((s: { url: string }) => download(s.url).then(decodeFloat)),
    );
    const whole = await download(done.vocalAudioFileUrl).then(decodeFloat);
    const ratio = rms(reverb!) / rms(harmony!);
    assert.ok(Math.abs(ratio / (0.2 / 0.3) - 1) < 0.02, `reverb / harmony level ${ratio}, expected ${0.2 / 0.3}`);
    let error = 0;
    for (let i = 0; i < whole.length; i++) error = Math.max(error, Math.abs(lead![i]! + harmony![i]! + reverb![i]! - whole[i]!));
    assert.ok(error < 1e-6, `lead = whole − harmony − reverb (max error ${error})`);
    // the test model's parts are band-limited copies of the whole vocal: its lead keeps the rest
    assert.ok(rms(lead!) > rms(harmony!), "the lead keeps what the split did not take");
    assert.equal(backing!.length, whole.length);
  });

  it("leaves a stem split's stems unsplit: its vocals are the whole vocal", async () => {
    const path = await makeSong("split.wav", 3);
    const created = await postForm(d, "stem-splits", { inputFile: { path } });
    const done = await waitForEnd(d, `stem-splits/${((await created.json()) as { id: number }).id}`);
    assert.equal(done.status, "success", done.errorMessage);
    const instruments = done.stemFileUrls.map((s: { instrument: string }) => s.instrument);
    assert.deepEqual([...instruments].sort(), ["bass", "drums", "other", "vocals"]);
    const vocalsStem = done.stemFileUrls.find((s: { instrument: string }) => s.instrument === "vocals").url;
    const [stem, whole] = await Promise.all([
      download(vocalsStem).then(decodeFloat),
      download(done.vocalAudioFileUrl).then(decodeFloat),
    ]);
    assert.deepEqual(stem, whole);
  });
});
