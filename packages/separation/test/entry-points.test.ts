import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { Worker } from "node:worker_threads";
import { probeAudio } from "@mixdown/audio";
import { ModelRegistry, separateFile, type SeparateFileResult, type SeparationProgress } from "../src/index.ts";
import { SMALL, writeTestModel } from "./support/mdx-test-models.ts";
import { faded, readStereo, snrDb, tones, writeStereo } from "./support/signals.ts";

const run = promisify(execFile);
const PACKAGE_DIR = resolve(import.meta.dirname, "..");
const DEFAULT_MODELS_DIR = resolve(PACKAGE_DIR, "../../models");

describe("entry points", () => {
  let dir: string;
  let inputPath: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mixdown-entry-test-"));
    await writeTestModel(dir, { ...SMALL, name: "vocals" });
    inputPath = join(dir, "song.wav");
    const x = faded(tones(20_000, SMALL.sampleRate, [{ freq: 440, amp: 0.3 }]), 512);
    await writeStereo(inputPath, { left: x, right: x }, SMALL.sampleRate);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it("separateFile runs inside a worker_threads Worker with progress messages and plain-data results", async () => {
    const worker = new Worker(new URL("./support/separation-worker.ts", import.meta.url), {
      workerData: { modelsDir: dir, modelName: "vocals", inputPath, outDir: join(dir, "worker-out") },
    });
    const progress: SeparationProgress[] = [];
    const result = await new Promise<SeparateFileResult>((resolvePromise, reject) => {
      worker.on("message", (m: { type: string; progress?: SeparationProgress; result?: SeparateFileResult }) => {
        if (m.type === "progress") progress.push(m.progress!);
        else resolvePromise(m.result!);
      });
      worker.on("error", reject);
    });
    await worker.terminate();
    assert.ok(progress.length > 0 && progress.at(-1)!.fraction === 1);
    assert.deepEqual(Object.keys(result.stems), ["vocals", "backing"]);
    assert.deepEqual((await readdir(join(dir, "worker-out"))).sort(), [
      "backing.flac",
      "backing.mp3",
      "vocals.flac",
      "vocals.mp3",
    ]);
    assert.equal((await probeAudio(result.stems.vocals.flac!)).frames, 20_000);
  });
});

describe("default models (run when models/*.onnx exist)", () => {
  const haveVocals = existsSync(join(DEFAULT_MODELS_DIR, "vocals.onnx"));
  const haveStems = existsSync(join(DEFAULT_MODELS_DIR, "stems.onnx"));
  let dir: string;
  let mixPath: string;
  let registry: ModelRegistry;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mixdown-default-models-test-"));
    registry = new ModelRegistry({ modelsDir: DEFAULT_MODELS_DIR });
    mixPath = join(dir, "mix.flac");
    // 48 kHz, so the resample back to the input rate is exercised too; nothing
    // above 22 kHz, which the 44.1 kHz model could not carry
    await run("ffmpeg", [
      "-v",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      "sine=f=220:r=48000:d=9",
      "-f",
      "lavfi",
      "-i",
      "anoisesrc=c=pink:r=48000:d=9:a=0.05,lowpass=f=12000,lowpass=f=12000",
      "-f",
      "lavfi",
      "-i",
      "aevalsrc=0.2*sin(2*PI*(300+100*sin(2*PI*0.5*t))*t)*(1+sin(2*PI*3*t))/2:s=48000:d=9",
      "-filter_complex",
      "[0][1][2]amix=inputs=3:normalize=0,pan=stereo|c0=c0|c1=0.8*c0",
      "-c:a",
      "flac",
      mixPath,
    ]);
  });
  after(async () => {
    await registry.close();
    await rm(dir, { recursive: true, force: true });
  });

  it(
    "vocals: writes vocals and backing at the input length, and vocals + backing = mixture",
    { skip: !haveVocals && "models/vocals.onnx not present" },
    async () => {
      const result = await separateFile({
        inputPath: mixPath,
        model: await registry.load("vocals"),
        outDir: join(dir, "vocals"),
      });
      assert.equal(result.sampleRate, 48000);
      const mix = await readStereo(mixPath, 48000);
      const vocals = await readStereo(result.stems.vocals.wav!, 48000);
      const backing = await readStereo(result.stems.backing.wav!, 48000);
      assert.equal(vocals.left.length, mix.left.length);
      assert.equal(backing.left.length, mix.left.length);
      const sum = {
        left: vocals.left.map((v, i) => v + backing.left[i]),
        right: vocals.right.map((v, i) => v + backing.right[i]),
      };
      // exact at the model rate; the two soxr resamples back to 48 kHz leave only their own error
      assert.ok(snrDb(mix, sum) > 50, `${snrDb(mix, sum).toFixed(1)} dB`);
    },
  );

  it(
    "stems: writes vocals, drums, bass, other and backing at the input length",
    { skip: !haveStems && "models/stems.onnx not present" },
    async () => {
      const result = await separateFile({ inputPath: mixPath, model: await registry.load("stems"), outDir: join(dir, "stems") });
      assert.deepEqual(Object.keys(result.stems), ["vocals", "drums", "bass", "other", "backing"]);
      for (const files of Object.values(result.stems)) assert.equal((await probeAudio(files.wav!)).frames, 9 * 48000);
    },
  );
});
