import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { EnsembleMixer, ModelRegistry, separateEnsemble, separateFile, type EnsembleAlgorithm } from "../src/index.ts";
import { SMALL, writeTestModel } from "./support/mdx-test-models.ts";
import { faded, readStereo, snrDb, tones, writeStereo, type Stereo } from "./support/signals.ts";

const RATE = SMALL.sampleRate;

function interleave(x: Stereo): Float32Array {
  const out = new Float32Array(x.left.length * 2);
  for (let i = 0; i < x.left.length; i++) {
    out[2 * i] = x.left[i]!;
    out[2 * i + 1] = x.right[i]!;
  }
  return out;
}

function deinterleave(x: Float32Array): Stereo {
  const n = x.length / 2;
  return {
    left: Float32Array.from({ length: n }, (_, i) => x[2 * i]!),
    right: Float32Array.from({ length: n }, (_, i) => x[2 * i + 1]!),
  };
}

describe("separateEnsemble", () => {
  let dir: string;
  let registry: ModelRegistry;
  let inputPath: string;
  const frames = 12_011;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mixdown-ensemble-test-"));
    registry = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1 });
    // two 3-stem models that share vocals and drums under those names, with other gains
    await writeTestModel(dir, {
      ...SMALL,
      name: "a",
      stems: [
        { name: "vocals", gain: 0.3 },
        { name: "drums", gain: 0.5 },
        { name: "bass", gain: 0.2 },
      ],
      channelGains: [1, 1, 0.5, 0.5],
    });
    await writeTestModel(dir, {
      ...SMALL,
      name: "b",
      stems: [
        { name: "drums", gain: 0.25 },
        { name: "vocals", gain: 0.7 },
        { name: "piano", gain: 0.05 },
      ],
      gather: [2, 3, 0, 1],
    });
    inputPath = join(dir, "in.wav");
    await writeStereo(
      inputPath,
      {
        left: faded(
          tones(frames, RATE, [
            { freq: 440, amp: 0.3 },
            { freq: 1234.5, amp: 0.2 },
          ]),
          2 * SMALL.nFft,
        ),
        right: faded(
          tones(frames, RATE, [
            { freq: 697, amp: 0.35 },
            { freq: 2003, amp: 0.15, phase: 1 },
          ]),
          2 * SMALL.nFft,
        ),
      },
      RATE,
    );
  });
  after(async () => {
    await registry.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Each model alone, through separateFile, as float WAVs read back. */
  async function alone(name: string): Promise<Record<string, Stereo>> {
    const result = await separateFile({ inputPath, model: await registry.load(name), outDir: join(dir, `alone-${name}`) });
    const stems: Record<string, Stereo> = {};
    for (const [stem, files] of Object.entries(result.stems)) stems[stem] = await readStereo(files.wav!, RATE);
    return stems;
  }

  for (const algorithm of ["avg_wave", "max_mag", "uvr_min_spec"] as EnsembleAlgorithm[]) {
    it(`${algorithm}: writes the common stems, each the algorithm applied to the members' own outputs (> 100 dB)`, async () => {
      const models = [await registry.load("a"), await registry.load("b")];
      const progress: number[] = [];
      const outDir = join(dir, `ensemble-${algorithm}`);
      const result = await separateEnsemble({
        inputPath,
        models,
        algorithm,
        outDir,
        onProgress: (p) => progress.push(p.fraction!),
      });
      assert.deepEqual(Object.keys(result.stems).sort(), ["backing", "drums", "vocals"]);
      assert.equal(result.frames, frames);
      assert.deepEqual(
        result.members.map((m) => m.model),
        ["a", "b"],
      );
      assert.deepEqual(
        await readdir(outDir).then((f) => f.sort()),
        ["backing.wav", "drums.wav", "vocals.wav"],
        "members' files removed",
      );
      assert.ok(
        progress.every((p, i) => i === 0 || p >= progress[i - 1]!),
        "progress never goes back",
      );
      assert.equal(progress.at(-1), 1);

      const [a, b] = [await alone("a"), await alone("b")];
      for (const stem of ["vocals", "drums", "backing"]) {
        const mixer = await EnsembleMixer.create(algorithm, 2);
        const head = mixer.push([interleave(a[stem]!), interleave(b[stem]!)]);
        const tail = mixer.finish();
        const expected = deinterleave(Float32Array.from([...head, ...tail]));
        const got = await readStereo(result.stems[stem]!.wav!, RATE);
        assert.equal(got.left.length, frames);
        const snr = snrDb(expected, got);
        assert.ok(snr > 100, `${stem}: ${snr.toFixed(1)} dB`);
      }
    });
  }

  it("combines stems of other names when told which is which, and keeps the members' files when asked", async () => {
    const models = [await registry.load("a"), await registry.load("b")];
    const outDir = join(dir, "named");
    const result = await separateEnsemble({
      inputPath,
      models,
      algorithm: "median_wave",
      outDir,
      stems: [{ name: "other", from: ["bass", "piano"] }],
      keepMembers: true,
    });
    assert.deepEqual(Object.keys(result.stems), ["other"]);
    assert.deepEqual(Object.keys(result.members[0]!.stems), ["bass"]);
    assert.deepEqual(Object.keys(result.members[1]!.stems), ["piano"]);
    assert.deepEqual(await readdir(join(outDir, "members")).then((f) => f.sort()), ["0", "1"]);
  });

  it("refuses one model, a model twice, and models with no stem in common", async () => {
    const a = await registry.load("a");
    await assert.rejects(separateEnsemble({ inputPath, models: [a], algorithm: "avg_wave", outDir: dir }), /2 or more models/);
    await assert.rejects(separateEnsemble({ inputPath, models: [a, a], algorithm: "avg_wave", outDir: dir }), /each model once/);
    await writeTestModel(dir, {
      ...SMALL,
      name: "solo",
      stems: [
        { name: "guitar", gain: 1 },
        { name: "keys", gain: 1 },
      ],
    });
    const solo = await registry.load("solo");
    await assert.rejects(
      separateEnsemble({ inputPath, models: [a, solo], algorithm: "avg_wave", outDir: dir }),
      /no stem in common/,
    );
  });

  it("stops when aborted between members", async () => {
    const models = [await registry.load("a"), await registry.load("b")];
    const controller = new AbortController();
    const outDir = join(dir, "aborted");
    await assert.rejects(
      separateEnsemble({
        inputPath,
        models,
        algorithm: "avg_wave",
        outDir,
        signal: controller.signal,
        onProgress: (p) => {
          if (p.fraction! > 0.3) controller.abort();
        },
      }),
      (err: Error) => err.name === "AbortError" || /abort/i.test(err.message),
    );
    assert.deepEqual(await readdir(outDir).catch(() => []), [], "nothing left behind");
  });
});
