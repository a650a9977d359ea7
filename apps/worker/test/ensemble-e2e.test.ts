import assert from "node:assert/strict";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { EnsembleMixer, ModelRegistry, separateFile, type EnsembleAlgorithm } from "@mixdown/separation";
import { SMALL, writeTestModel } from "../../../packages/separation/test/support/mdx-test-models.ts";
import {
  decodeFloat,
  download,
  makeSong,
  postForm,
  snrDb,
  startDeployment,
  waitForEnd,
  type Deployment,
} from "../testing/harness.ts";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const SIX = [
  { name: "drums", gain: 0.1 },
  { name: "bass", gain: 0.2 },
  { name: "other", gain: 0.3 },
  { name: "vocals", gain: 0.25 },
  { name: "guitar", gain: 0.05 },
  { name: "piano", gain: 0.1 },
];

/** A published file against the engine's own combination: the same length, sample for sample. */
const EXACT = { sameLength: true, noiseFloor: 1e-30 };

/**
 * Ensembles through the whole service: the API stores the list and the algorithm, the worker runs
 * every member and publishes the combination. Each published file is compared with the algorithm
 * applied to the members' own outputs, computed here with the engine, one model at a time.
 */
describe("ensemble separation jobs", () => {
  let d: Deployment;
  let modelsDir: string;
  let registry: ModelRegistry;
  let scratch: string;
  before(async () => {
    modelsDir = await mkdtemp(join(tmpdir(), "mixdown-worker-ensemble-models-"));
    scratch = await mkdtemp(join(tmpdir(), "mixdown-worker-ensemble-"));
    const repoModels = resolve(repoRoot, "models");
    // the shipped defaults; no vocal-split model, so a vocal separation publishes the ensemble's vocals and backing
    for (const f of ["vocals.json", "vocals.onnx", "stems.json", "stems.onnx"])
      await copyFile(join(repoModels, f), join(modelsDir, f));
    await writeTestModel(modelsDir, { ...SMALL, name: "six", stems: SIX });
    registry = new ModelRegistry({ modelsDir });
    // the settings name an ensemble of the two defaults for vocal separations
    d = await startDeployment({
      MODELS_DIR: modelsDir,
      SEPARATION_MODEL_VOCALS: "vocals,stems",
      SEPARATION_ENSEMBLE_VOCALS: "max_mag",
    });
  });
  after(async () => {
    await d?.stop();
    await registry?.close();
    await rm(modelsDir, { recursive: true, force: true });
    await rm(scratch, { recursive: true, force: true });
  });

  /** `stem` of each model alone on `input`, combined by `algorithm` (interleaved stereo). */
  async function expected(input: string, members: Array<[model: string, stem: string]>, algorithm: EnsembleAlgorithm) {
    const outputs: Float32Array[] = [];
    for (const [name, stem] of members) {
      const result = await separateFile({
        inputPath: input,
        model: await registry.load(name),
        outDir: join(scratch, name),
        stems: [stem],
      });
      outputs.push(await decodeFloat(result.stems[stem]!.wav!));
    }
    const mixer = await EnsembleMixer.create(algorithm, outputs.length);
    const head = mixer.push(outputs);
    const tail = mixer.finish();
    const out = new Float32Array(head.length + tail.length);
    out.set(head);
    out.set(tail, head.length);
    return out;
  }

  it("a vocal separation naming no model runs the settings' ensemble (vocals,stems with max_mag): its vocals and backing are max_mag of each model's own (> 100 dB)", async () => {
    const path = await makeSong("ensemble-song.wav", 4);
    const created = await postForm(d, "vocal-separations", { inputFile: { path } });
    assert.equal(created.status, 200, await created.clone().text());
    const done = await waitForEnd(d, `vocal-separations/${((await created.json()) as { id: number }).id}`);
    assert.equal(done.status, "success", done.errorMessage);
    assert.deepEqual(
      [done.model, done.ensemble],
      ["vocals,stems", "max_mag"],
      "the settings' ensemble is recorded once the job succeeded",
    );
    assert.deepEqual(
      done.stemFileUrls.map((s: { instrument: string }) => s.instrument),
      ["vocals", "backing"],
    );
    for (const [url, stem] of [
      [done.vocalAudioFileUrl, "vocals"],
      [done.backingAudioFileUrl, "backing"],
    ] as const) {
      const want = await expected(
        path,
        [
          ["vocals", stem],
          ["stems", stem],
        ],
        "max_mag",
      );
      const snr = snrDb(want, await download(url).then(decodeFloat), EXACT);
      assert.ok(snr > 100, `${stem}: ${snr.toFixed(1)} dB`);
    }
    assert.equal(done.progress, 100);
  });

  it("a vocal separation naming stems,vocals with the default avg_wave publishes the mean of the two, in that order", async () => {
    const path = await makeSong("ensemble-avg.wav", 3);
    const created = await postForm(d, "vocal-separations", { inputFile: { path }, model: "stems,vocals" });
    assert.equal(created.status, 200, await created.clone().text());
    const record = (await created.json()) as { id: number; model: string; ensemble: string };
    assert.deepEqual([record.model, record.ensemble], ["stems,vocals", "avg_wave"]);
    const done = await waitForEnd(d, `vocal-separations/${record.id}`);
    assert.equal(done.status, "success", done.errorMessage);
    const want = await expected(
      path,
      [
        ["stems", "vocals"],
        ["vocals", "vocals"],
      ],
      "avg_wave",
    );
    const snr = snrDb(want, await download(done.vocalAudioFileUrl).then(decodeFloat), EXACT);
    assert.ok(snr > 100, `vocals: ${snr.toFixed(1)} dB`);
  });

  it("a stem split of six and stems publishes the four stems they share, each uvr_min_spec of the two", async () => {
    const path = await makeSong("ensemble-split.wav", 3);
    const created = await postForm(d, "stem-splits", { inputFile: { path }, model: "six,stems", ensemble: "uvr_min_spec" });
    assert.equal(created.status, 200, await created.clone().text());
    const done = await waitForEnd(d, `stem-splits/${((await created.json()) as { id: number }).id}`);
    assert.equal(done.status, "success", done.errorMessage);
    assert.deepEqual([done.model, done.ensemble], ["six,stems", "uvr_min_spec"]);
    assert.deepEqual(
      done.stemFileUrls.map((s: { instrument: string }) => s.instrument),
      ["drums", "bass", "other", "vocals"],
    );
    assert.ok(done.vocalAudioFileUrl && done.backingAudioFileUrl && done.lossyVocalAudioFileUrl);
    const drums = done.stemFileUrls.find((s: { instrument: string }) => s.instrument === "drums").url;
    const want = await expected(
      path,
      [
        ["six", "drums"],
        ["stems", "drums"],
      ],
      "uvr_min_spec",
    );
    const snr = snrDb(want, await download(drums).then(decodeFloat), EXACT);
    assert.ok(snr > 100, `drums: ${snr.toFixed(1)} dB`);
  });
});
