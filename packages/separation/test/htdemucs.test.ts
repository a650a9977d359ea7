import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { decodeToPcm } from "@mixdown/audio";
import { ChunkPlan } from "../src/families/htdemucs/chunking.ts";
import { HtdemucsModel } from "../src/families/htdemucs/model.ts";
import {
  emptyTimings,
  ManifestError,
  ModelRegistry,
  outputStemNames,
  parseManifest,
  separateFile,
  separateStream,
} from "../src/index.ts";
import { readStereo, snrDb, type Stereo } from "./support/signals.ts";

const FIXTURES = join(import.meta.dirname, "fixtures/htdemucs");
const RATE = 44100;
const STEMS = ["drums", "bass", "other", "vocals"];

async function references(folder = "reference", stems = STEMS): Promise<Record<string, Stereo>> {
  const { gain } = JSON.parse(await readFile(join(FIXTURES, folder, "references.json"), "utf8")) as {
    gain: Record<string, number>;
  };
  const out: Record<string, Stereo> = {};
  for (const stem of stems) {
    const { left, right } = await readStereo(join(FIXTURES, folder, `${stem}.flac`), RATE);
    out[stem] = { left: left.map((v) => v / gain[stem]), right: right.map((v) => v / gain[stem]) };
  }
  return out;
}

/** Writes `dir/bag.json`: a bag of the fixture's network, one member per row of `weights` (member × stem). */
async function writeFixtureBag(dir: string, weights: number[][]): Promise<void> {
  const onnx = join(FIXTURES, "htdemucs-tiny.onnx");
  const single = JSON.parse(await readFile(join(FIXTURES, "htdemucs-tiny.json"), "utf8"));
  const members = weights.map(() => ({ ...single.members[0], file: onnx }));
  await writeFile(join(dir, "bag.json"), JSON.stringify({ ...single, name: "bag", file: onnx, members, weights }));
}

describe("htdemucs: the fixture model against demucs's own apply_model", () => {
  let registry: ModelRegistry;
  let outDir: string;
  let refs: Record<string, Stereo>;

  before(async () => {
    registry = new ModelRegistry({ modelsDir: FIXTURES, intraOpThreads: 1 });
    outDir = await mkdtemp(join(tmpdir(), "mixdown-htdemucs-test-"));
    refs = await references();
  });
  after(async () => {
    await registry.close();
    await rm(outDir, { recursive: true, force: true });
  });

  it("separateFile matches demucs (CLI normalisation, shifts 0, overlap 0.25) to ≥ 60 dB per stem, seams included", async () => {
    const model = await registry.load("htdemucs-tiny");
    const result = await separateFile({
      inputPath: join(FIXTURES, "mixture.flac"),
      model,
      outDir,
      outputs: [{ format: "wav", sampleFormat: "f32" }],
    });
    // 6 s at a 2.5 s segment and stride 82687: 4 chunks, the last two padded around their centre
    assert.equal(result.chunks, 4);
    for (const stem of STEMS) {
      const snr = snrDb(refs[stem], await readStereo(result.stems[stem].wav!, RATE));
      assert.ok(snr >= 60, `${stem}: ${snr.toFixed(1)} dB`);
    }
    // backing = mixture − vocals
    const mixture = await readStereo(join(FIXTURES, "mixture.flac"), RATE);
    const backing = await readStereo(result.stems.backing.wav!, RATE);
    const expected: Stereo = {
      left: mixture.left.map((v, i) => v - refs.vocals.left[i]),
      right: mixture.right.map((v, i) => v - refs.vocals.right[i]),
    };
    assert.ok(snrDb(expected, backing) >= 60);
  });

  it("gives the same stems from a one-shot stream (the first pass spooled to a file) in small blocks", async () => {
    const model = await registry.load("htdemucs-tiny");
    async function* blocks() {
      for await (const block of decodeToPcm(join(FIXTURES, "mixture.flac"), { sampleRate: RATE })) {
        for (let i = 0; i < block.length; i += 2 * 3000) yield block.subarray(i, Math.min(block.length, i + 2 * 3000));
      }
    }
    const got: Record<string, { left: number[]; right: number[] }> = {};
    for (const stem of STEMS) got[stem] = { left: [], right: [] };
    for await (const block of separateStream(blocks(), model, { stems: STEMS })) {
      for (const stem of STEMS) {
        const data = block.stems[stem];
        for (let i = 0; i < block.frames; i++) {
          got[stem].left.push(data[2 * i]);
          got[stem].right.push(data[2 * i + 1]);
        }
      }
    }
    for (const stem of STEMS) {
      const est = { left: Float32Array.from(got[stem].left), right: Float32Array.from(got[stem].right) };
      const snr = snrDb(refs[stem], est);
      assert.ok(snr >= 60, `${stem}: ${snr.toFixed(1)} dB`);
    }
  });

  it("runs a bag: each member chunked on its own, stems combined as Σ w·out / Σ w", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mixdown-htdemucs-bag-"));
    const bagRegistry = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1 });
    try {
      // two members running the same network: any weighting that normalises per stem gives the single model's stems back
      await writeFixtureBag(dir, [
        [1, 0, 2, 0.5],
        [1, 3, 0, 1.5],
      ]);
      const model = await bagRegistry.load("bag");
      const result = await separateFile({ inputPath: join(FIXTURES, "mixture.flac"), model, outDir: dir, stems: STEMS });
      assert.equal(result.chunks, 8);
      for (const stem of STEMS) {
        const snr = snrDb(refs[stem], await readStereo(result.stems[stem].wav!, RATE));
        assert.ok(snr >= 60, `${stem}: ${snr.toFixed(1)} dB`);
      }
    } finally {
      await bagRegistry.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("runs a bag's members in turn, one session open at a time, for the same bytes as side by side", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mixdown-htdemucs-in-turn-"));
    const together = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1, warmUp: false });
    const inTurn = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1, warmUp: false, bagMembers: "in turn" });
    try {
      // three members, each weighting other stems: the partial sums carry some stems and not others
      await writeFixtureBag(dir, [
        [1, 0, 2, 0],
        [0, 3, 0, 1.5],
        [0.5, 1, 1, 1],
      ]);
      const [all, oneByOne] = await Promise.all([together.load("bag"), inTurn.load("bag")]);
      assert.ok(all instanceof HtdemucsModel && oneByOne instanceof HtdemucsModel);
      assert.equal(all.openMembers, 3);
      assert.equal(oneByOne.openMembers, 1);
      const stems = [...STEMS, "backing"];
      const progress: number[] = [];
      let firstBlockAt: number | undefined;
      const collect = async (model: HtdemucsModel) => {
        const got: Record<string, Float32Array[]> = Object.fromEntries(stems.map((stem) => [stem, []]));
        progress.length = 0;
        firstBlockAt = undefined;
        // a one-shot stream: the passes after the first read the input back from the spooled file
        const input = decodeToPcm(join(FIXTURES, "mixture.flac"), { sampleRate: RATE });
        const onProgress = (p: { fraction?: number }) => progress.push(p.fraction ?? Number.NaN);
        for await (const block of separateStream(input, model, { stems, totalFrames: 6 * RATE, onProgress })) {
          firstBlockAt ??= progress.length;
          for (const stem of stems) got[stem].push(block.stems[stem]);
        }
        return Object.fromEntries(stems.map((stem) => [stem, Float32Array.from(got[stem].flatMap((b) => [...b]))]));
      };
      const [expected, actual] = [await collect(all), await collect(oneByOne)];
      // the same bytes (a deepEqual of 500,000 floats would spend minutes on its message when they differ)
      for (const stem of stems) {
        const [a, e] = [actual[stem], expected[stem]];
        const at = a.length === e.length ? a.findIndex((v, i) => !Object.is(v, e[i])) : 0;
        assert.equal(
          at,
          -1,
          `${stem}: ${a.length} against ${e.length} samples, the first difference at ${at}: ${a[at]} against ${e[at]}`,
        );
      }
      assert.equal(oneByOne.openMembers, 1);
      // progress moves in the two passes that yield nothing: two thirds of the work before the first block
      assert.ok(firstBlockAt !== undefined && progress[firstBlockAt - 1] >= 2 / 3, String(progress));
      assert.ok(
        progress.every((f, i) => i === 0 || f >= progress[i - 1]),
        String(progress),
      );
      assert.equal(progress.at(-1), 1);
      // a file: each pass decodes it again; the WAVs are the same bytes
      const files = async (model: HtdemucsModel, out: string) =>
        separateFile({
          inputPath: join(FIXTURES, "mixture.flac"),
          model,
          outDir: join(dir, out),
          stems: STEMS,
          outputs: [{ format: "wav", sampleFormat: "f32" }],
        });
      const [a, b] = [await files(all, "together"), await files(oneByOne, "in-turn")];
      assert.equal(b.chunks, a.chunks);
      for (const stem of STEMS) assert.ok((await readFile(b.stems[stem].wav!)).equals(await readFile(a.stems[stem].wav!)), stem);
    } finally {
      await Promise.all([together.close(), inTurn.close()]);
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe("shifts (apply_model(shifts=2) with random.randint fixed to 7000, then 19000)", () => {
    const SHIFTED = ["drums", "vocals"];
    const OFFSETS = [7000, 19000];
    let shifted: Record<string, Stereo>;
    before(async () => {
      shifted = await references("reference-shifts", SHIFTED);
    });

    /** separateStream over the fixture (decoded once per pass), the offsets drawn from `offsets` */
    async function separateShifted(
      offsets: number[],
      options: { shifts?: number; batchSize?: number; registry?: ModelRegistry; name?: string } = {},
    ) {
      const model = await (options.registry ?? registry).load(options.name ?? "htdemucs-tiny");
      const draws: number[] = [];
      const queue = [...offsets];
      const decode = () => decodeToPcm(join(FIXTURES, "mixture.flac"), { sampleRate: RATE });
      const got: Record<string, { left: number[]; right: number[] }> = {};
      for (const stem of SHIFTED) got[stem] = { left: [], right: [] };
      const timings = emptyTimings();
      for await (const block of separateStream(decode(), model, {
        stems: SHIFTED,
        reopen: decode,
        timings,
        ...(options.shifts !== undefined ? { shifts: options.shifts } : {}),
        ...(options.batchSize !== undefined ? { batchSize: options.batchSize } : {}),
        randomShift: (max) => {
          draws.push(max);
          return queue.shift()!;
        },
      })) {
        for (const stem of SHIFTED) {
          const data = block.stems[stem];
          for (let i = 0; i < block.frames; i++) {
            got[stem].left.push(data[2 * i]);
            got[stem].right.push(data[2 * i + 1]);
          }
        }
      }
      const stems: Record<string, Stereo> = {};
      for (const stem of SHIFTED)
        stems[stem] = { left: Float32Array.from(got[stem].left), right: Float32Array.from(got[stem].right) };
      return { stems, draws, chunks: timings.chunks };
    }

    it("matches demucs to ≥ 60 dB per stem, the chunks of both shifts batched together", async () => {
      const { stems, draws, chunks } = await separateShifted(OFFSETS, { shifts: 2, batchSize: 3 });
      // demucs's max_shift = int(0.5 · 44100), one draw per shift
      assert.deepEqual(draws, [22050, 22050]);
      // 6 s delayed by 15050 and 3050 samples: 4 chunks each at stride 82687
      assert.equal(chunks, 8);
      for (const stem of SHIFTED) {
        const snr = snrDb(shifted[stem], stems[stem]);
        assert.ok(snr >= 60, `${stem}: ${snr.toFixed(1)} dB`);
        // and far from the unshifted output, which the test would otherwise not tell apart
        assert.ok(snrDb(refs[stem], stems[stem]) < 20);
      }
    });

    it("falls far below 60 dB when the offsets differ (the test sees where a shift lands)", async () => {
      const { stems } = await separateShifted([7001, 19000], { shifts: 2 });
      const snr = snrDb(shifted.vocals, stems.vocals);
      assert.ok(snr < 40, `vocals with offsets 7001, 19000: ${snr.toFixed(1)} dB`);
    });

    it("takes the manifest's shifts when the caller gives none, and shifts 0 still overrides it", async () => {
      const dir = await mkdtemp(join(tmpdir(), "mixdown-htdemucs-shifts-"));
      const shiftedRegistry = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1 });
      try {
        const single = JSON.parse(await readFile(join(FIXTURES, "htdemucs-tiny.json"), "utf8"));
        const onnx = join(FIXTURES, "htdemucs-tiny.onnx");
        const manifest = { ...single, name: "shifted", file: onnx, members: [{ ...single.members[0], file: onnx }], shifts: 2 };
        await writeFile(join(dir, "shifted.json"), JSON.stringify(manifest));
        const byManifest = await separateShifted(OFFSETS, { registry: shiftedRegistry, name: "shifted" });
        assert.deepEqual(byManifest.draws, [22050, 22050]);
        for (const stem of SHIFTED) assert.ok(snrDb(shifted[stem], byManifest.stems[stem]) >= 60, stem);
        const unshifted = await separateShifted([], { registry: shiftedRegistry, name: "shifted", shifts: 0 });
        assert.deepEqual(unshifted.draws, []);
        for (const stem of SHIFTED) assert.ok(snrDb(refs[stem], unshifted.stems[stem]) >= 60, stem);
      } finally {
        await shiftedRegistry.close();
        await rm(dir, { recursive: true, force: true });
      }
    });

    it("shifts a bag per member (each draws its own offsets), averages each member's, then weights them", async () => {
      const dir = await mkdtemp(join(tmpdir(), "mixdown-htdemucs-shifted-bag-"));
      const bagRegistry = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1 });
      try {
        await writeFixtureBag(dir, [
          [1, 0, 2, 0.5],
          [1, 3, 0, 1.5],
        ]);
        // the same network twice, each member with the two offsets (in either order): demucs's single-model output
        const { stems, draws, chunks } = await separateShifted([7000, 19000, 19000, 7000], {
          registry: bagRegistry,
          name: "bag",
          shifts: 2,
        });
        assert.equal(draws.length, 4);
        assert.equal(chunks, 16);
        for (const stem of SHIFTED) {
          const snr = snrDb(shifted[stem], stems[stem]);
          assert.ok(snr >= 60, `${stem}: ${snr.toFixed(1)} dB`);
        }
      } finally {
        await bagRegistry.close();
        await rm(dir, { recursive: true, force: true });
      }
    });

    it("refuses a shift count that is not an integer ≥ 0, and an offset outside 0..max_shift", async () => {
      const model = await registry.load("htdemucs-tiny");
      const run = async (options: Parameters<typeof separateStream>[2]) => {
        for await (const _ of separateStream(decodeToPcm(join(FIXTURES, "mixture.flac"), { sampleRate: RATE }), model, options));
      };
      await assert.rejects(run({ shifts: -1 }), /shifts must be an integer/);
      await assert.rejects(run({ shifts: 1.5 }), /shifts must be an integer/);
      await assert.rejects(run({ shifts: 1, randomShift: () => 22051 }), /offset must be an integer in 0\.\.22050/);
    });
  });

  it("falls far below 60 dB with a wrong overlap (0.5): the test sees the chunk seams", async () => {
    const model = await registry.load("htdemucs-tiny");
    const result = await separateFile({
      inputPath: join(FIXTURES, "mixture.flac"),
      model,
      outDir,
      overlap: 0.5,
      stems: ["vocals"],
    });
    const snr = snrDb(refs.vocals, await readStereo(result.stems.vocals.wav!, RATE));
    assert.ok(snr < 30, `vocals at overlap 0.5: ${snr.toFixed(1)} dB`);
  });
});

describe("htdemucs: chunk geometry (demucs.apply.apply_model, TensorChunk)", () => {
  it("strides int((1 − overlap)·segment), weights triangularly and centres a short last chunk", () => {
    const plan = new ChunkPlan(343980, 0.25, 441000);
    assert.equal(plan.stride, 257985);
    assert.equal(plan.count, 2);
    assert.equal(plan.length(1), 441000 - 257985);
    const delta = 343980 - (441000 - 257985);
    assert.equal(plan.inputStart(1), 257985 - Math.floor(delta / 2));
    assert.equal(plan.trim(1), Math.floor(delta / 2));
    assert.equal(plan.weight[0], Math.fround(1 / 171990));
    assert.equal(plan.weight[171989], 1);
    assert.equal(plan.weight[171990], 1);
    assert.equal(plan.weight[343979], Math.fround(1 / 171990));
  });
});

describe("htdemucs manifests", () => {
  const valid = {
    name: "bag",
    architecture: "htdemucs",
    file: "a.onnx",
    sampleRate: 44100,
    nFft: 4096,
    hopLength: 1024,
    stems: STEMS,
    members: [
      { file: "a.onnx", segmentSamples: 343980 },
      { file: "b.onnx", segmentSamples: 343980 },
    ],
    weights: [
      [1, 0, 1, 0],
      [0, 1, 1, 1],
    ],
  };

  it("reads a bag and adds backing to the output stems", () => {
    const manifest = parseManifest(valid, "bag.json");
    assert.equal(manifest.architecture, "htdemucs");
    assert.deepEqual(outputStemNames(manifest), [...STEMS, "backing"]);
  });

  it("refuses weights that do not fit the members and stems, or leave a stem with none", () => {
    assert.throws(() => parseManifest({ ...valid, weights: [[1, 1, 1, 1]] }, "bag.json"), ManifestError);
    assert.throws(
      () =>
        parseManifest(
          {
            ...valid,
            weights: [
              [1, 0, 1, 1],
              [1, 0, 1, 1],
            ],
          },
          "bag.json",
        ),
      /"weights" for stem "bass" sum to 0/,
    );
    assert.throws(() => parseManifest({ ...valid, hopLength: 512 }, "bag.json"), /hopLength/);
    assert.throws(() => parseManifest({ ...valid, file: "b.onnx" }, "bag.json"), /first member/);
  });

  it("reads an optional default shifts, an integer ≥ 0", () => {
    assert.equal((parseManifest({ ...valid, shifts: 2 }, "bag.json") as { shifts?: number }).shifts, 2);
    assert.equal("shifts" in parseManifest(valid, "bag.json"), false);
    assert.throws(() => parseManifest({ ...valid, shifts: -1 }, "bag.json"), /"shifts" must be an integer/);
    assert.throws(() => parseManifest({ ...valid, shifts: 0.5 }, "bag.json"), /"shifts" must be an integer/);
  });
});
