import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { AudioDecodeError } from "@mixdown/audio";
import { ModelRegistry, separateFile, separateStream, stftHelperRequests, type SeparateFileResult } from "../src/index.ts";
import { SMALL, writeTestModel, type TestModelSpec } from "./support/mdx-test-models.ts";
import { faded, maxAbs, readStereo, scaled, snrDb, tones, writeStereo, type Stereo } from "./support/signals.ts";

const RATE = SMALL.sampleRate;
/** SMALL geometry: chunk 1984 samples, 1728 kept, step 1296 at the default overlap */
const FADE = 2 * SMALL.nFft;

function testMix(frames: number, rate: number = RATE): Stereo {
  return {
    left: faded(
      tones(frames, rate, [
        { freq: 440, amp: 0.3 },
        { freq: 1234.5, amp: 0.2 },
        { freq: 3100, amp: 0.05 },
      ]),
      FADE,
    ),
    right: faded(
      tones(frames, rate, [
        { freq: 697, amp: 0.35 },
        { freq: 2003, amp: 0.15, phase: 1 },
      ]),
      FADE,
    ),
  };
}

describe("separateFile with generated MDX-signature models", () => {
  let dir: string;
  let registry: ModelRegistry;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mixdown-separation-test-"));
    registry = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1 });
    await writeTestModel(dir, { ...SMALL, name: "identity" });
  });
  after(async () => {
    await registry.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function model(spec: Omit<TestModelSpec, keyof typeof SMALL> & Partial<TestModelSpec>) {
    await writeTestModel(dir, { ...SMALL, ...spec });
    return registry.load(spec.name);
  }

  async function separate(
    name: string,
    input: Stereo,
    options: Partial<Parameters<typeof separateFile>[0]> & { rate?: number } = {},
  ) {
    const rate = options.rate ?? RATE;
    const inputPath = join(dir, `in-${name}-${input.left.length}-${rate}.wav`);
    await writeStereo(inputPath, input, rate);
    const result = await separateFile({
      inputPath,
      model: await registry.load(name),
      outDir: join(dir, `out-${name}`),
      ...options,
    });
    const stems: Record<string, Stereo> = {};
    for (const [stem, files] of Object.entries(result.stems)) stems[stem] = await readStereo(files.wav ?? files.flac!, rate);
    return { result, stems };
  }

  it("returns the input through an identity model at >60 dB, seams included, for lengths that are not a multiple of the chunk", async () => {
    for (const frames of [40_001, 1_728, 5_000, 700]) {
      const input = testMix(frames);
      const { result, stems } = await separate("identity", input);
      assert.equal(result.frames, frames);
      assert.equal(stems.vocals.left.length, frames);
      assert.equal(stems.backing.left.length, frames);
      const snr = snrDb(input, stems.vocals);
      assert.ok(snr > 60, `${frames} frames: ${snr.toFixed(1)} dB`);
      assert.ok(maxAbs(stems.backing.left) < 2e-3 && maxAbs(stems.backing.right) < 2e-3);
    }
  });

  it("with a cut dimF, reconstructs the band below the cutoff at >60 dB and puts the rest in the secondary", async () => {
    // 64 bins of 31.25 Hz: cutoff at 2 kHz
    await model({ name: "cut", dimF: 64 });
    const frames = 30_011;
    const low = {
      left: faded(tones(frames, RATE, [{ freq: 500, amp: 0.3 }]), FADE),
      right: faded(tones(frames, RATE, [{ freq: 812, amp: 0.2 }]), FADE),
    };
    const high = {
      left: faded(tones(frames, RATE, [{ freq: 3000, amp: 0.2 }]), FADE),
      right: faded(tones(frames, RATE, [{ freq: 2700, amp: 0.25 }]), FADE),
    };
    const input = { left: low.left.map((v, i) => v + high.left[i]), right: low.right.map((v, i) => v + high.right[i]) };
    const { stems } = await separate("cut", input);
    assert.ok(snrDb(low, stems.vocals) > 60, `primary ${snrDb(low, stems.vocals).toFixed(1)} dB`);
    assert.ok(snrDb(high, stems.backing) > 60, `secondary ${snrDb(high, stems.backing).toFixed(1)} dB`);
    const sum = {
      left: stems.vocals.left.map((v, i) => v + stems.backing.left[i]),
      right: stems.vocals.right.map((v, i) => v + stems.backing.right[i]),
    };
    assert.ok(snrDb(input, sum) > 120, "secondary = mixture − primary");
  });

  it("feeds channels as [L.re, L.im, R.re, R.im]: zeroing channels 2-3 silences the right primary", async () => {
    await model({ name: "no-right", channelGains: [1, 1, 0, 0] });
    const input = testMix(12_000);
    const { stems } = await separate("no-right", input);
    assert.ok(maxAbs(stems.vocals.right) < 1e-6);
    assert.ok(snrDb({ left: input.left, right: new Float32Array(12_000) }, stems.vocals) > 60);
    assert.ok(snrDb({ left: new Float32Array(12_000), right: input.right }, stems.backing) > 60);
  });

  it("feeds channels as [L.re, L.im, R.re, R.im]: copying channels 0-1 into 2-3 puts the left signal in the right primary", async () => {
    await model({ name: "left-to-right", gather: [0, 1, 0, 1] });
    const input = testMix(12_000);
    const { stems } = await separate("left-to-right", input);
    assert.ok(snrDb({ left: input.left, right: input.left }, stems.vocals) > 60);
  });

  it("trims nFft/2 at each chunk side: zeroing the first and last frame changes nothing, zeroing frame 1 does", async () => {
    const edges = Array.from({ length: SMALL.dimT }, (_, t) => (t === 0 || t === SMALL.dimT - 1 ? 0 : 1));
    const second = Array.from({ length: SMALL.dimT }, (_, t) => (t === 1 ? 0 : 1));
    await model({ name: "no-edge-frames", frameGains: edges });
    await model({ name: "no-frame-1", frameGains: second });
    const input = testMix(20_000);
    for (const overlap of [0, 0.25, 0.5]) {
      const kept = await separate("no-edge-frames", input, { overlap });
      assert.ok(
        snrDb(input, kept.stems.vocals) > 60,
        `edge frames zeroed, overlap ${overlap}: ${snrDb(input, kept.stems.vocals).toFixed(1)} dB`,
      );
    }
    // without overlap nothing hides the damage under a neighbour's crossfade
    const damaged = await separate("no-frame-1", input, { overlap: 0 });
    assert.ok(snrDb(input, damaged.stems.vocals) < 40, `frame 1 zeroed: ${snrDb(input, damaged.stems.vocals).toFixed(1)} dB`);
  });

  it("zeroes the first 3 frequency bins: DC and a 31.25 Hz tone go to the secondary only", async () => {
    const frames = 24_000;
    const lowPart = tones(frames, RATE, [{ freq: 31.25, amp: 0.2 }], 0.1);
    const tone = faded(tones(frames, RATE, [{ freq: 1000, amp: 0.3 }]), FADE);
    const input = { left: tone.map((v, i) => v + lowPart[i]), right: tone.map((v, i) => v + lowPart[i]) };
    const { stems } = await separate("identity", input);
    // 1 kHz sits on bin 32 exactly, 31.25 Hz on bin 1: Hann leaks only into the neighbouring bins
    const toneOnly = { left: tone, right: tone };
    assert.ok(
      snrDb(trimmed(toneOnly), trimmed(stems.vocals)) > 60,
      `primary ${snrDb(trimmed(toneOnly), trimmed(stems.vocals)).toFixed(1)} dB`,
    );
    assert.ok(snrDb(trimmed({ left: lowPart, right: lowPart }), trimmed(stems.backing)) > 60);
  });

  it("multiplies the primary by compensate before deriving the secondary", async () => {
    await model({ name: "compensated", compensate: 1.5 });
    const input = testMix(15_000);
    const { stems } = await separate("compensated", input);
    assert.ok(snrDb(scaled(input, 1.5), stems.vocals) > 60);
    assert.ok(snrDb(scaled(input, -0.5), stems.backing) > 60);
  });

  it("crossfades chunk seams: a model whose gain ramps across each chunk yields no jump at the seams", async () => {
    const ramp = Array.from({ length: SMALL.dimT }, (_, t) => 0.5 + t / (SMALL.dimT - 1));
    await model({ name: "ramp", frameGains: ramp });
    const frames = 20_000;
    const sine = tones(frames, RATE, [{ freq: 100, amp: 0.5 }]);
    const input = { left: sine, right: sine };
    const maxStep = (x: Float32Array) => {
      let m = 0;
      for (let i = 1; i < x.length; i++) m = Math.max(m, Math.abs(x[i] - x[i - 1]));
      return m;
    };
    // largest step of a 100 Hz sine at gain ≤ 1.5: 1.5 · 0.5 · 2π·100/8000 ≈ 0.059
    const smooth = await separate("ramp", input);
    assert.ok(maxStep(smooth.stems.vocals.left.slice(FADE, -FADE)) < 0.08, `crossfaded: ${maxStep(smooth.stems.vocals.left)}`);
    // the same model without overlap jumps from gain ~1.5 to ~0.5 at each seam
    const hard = await separate("ramp", input, { overlap: 0 });
    assert.ok(maxStep(hard.stems.vocals.left.slice(FADE, -FADE)) > 0.15, "the check detects seams");
  });

  it("turns a mono input into identical stereo stems", async () => {
    const frames = 10_000;
    const mono = faded(tones(frames, RATE, [{ freq: 440, amp: 0.4 }]), FADE);
    const inputPath = join(dir, "mono.wav");
    await writeMono(inputPath, mono);
    const result = await separateFile({ inputPath, model: await registry.load("identity"), outDir: join(dir, "out-mono") });
    const vocals = await readStereo(result.stems.vocals.wav!, RATE);
    assert.ok(snrDb({ left: vocals.left, right: vocals.left }, vocals) > 120, "left and right agree");
    assert.ok(snrDb({ left: mono, right: mono }, vocals) > 60);
  });

  it("names the files of a multi-stem (rank-5) model after its stems and derives backing = mixture − vocals", async () => {
    await model({
      name: "two-stems",
      stems: [
        { name: "vocals", gain: 0.5 },
        { name: "drums", gain: 0.25 },
      ],
    });
    const input = testMix(9_000);
    const { result, stems } = await separate("two-stems", input);
    assert.deepEqual(Object.keys(result.stems).sort(), ["backing", "drums", "vocals"]);
    assert.deepEqual((await readdir(join(dir, "out-two-stems"))).sort(), ["backing.wav", "drums.wav", "vocals.wav"]);
    assert.ok(snrDb(scaled(input, 0.5), stems.vocals) > 60);
    assert.ok(snrDb(scaled(input, 0.25), stems.drums) > 60);
    assert.ok(snrDb(scaled(input, 0.5), stems.backing) > 60);
  });

  it("writes only the requested stems and formats, at the input rate and exact length", async () => {
    const frames = 33_333;
    const rate = 11025;
    const input = testMix(frames, rate);
    const inputPath = join(dir, "in-11k.wav");
    await writeStereo(inputPath, input, rate);
    const result = await separateFile({
      inputPath,
      model: await registry.load("identity"),
      outDir: join(dir, "out-11k"),
      stems: ["backing"],
      outputs: [
        { format: "flac", bitDepth: 16 },
        { format: "mp3", bitrateKbps: 128 },
      ],
    });
    assert.deepEqual(Object.keys(result.stems), ["backing"]);
    assert.deepEqual((await readdir(join(dir, "out-11k"))).sort(), ["backing.flac", "backing.mp3"]);
    assert.equal(result.sampleRate, rate);
    assert.equal(result.frames, frames);
    const backing = await readStereo(result.stems.backing.flac!, rate);
    assert.equal(backing.left.length, frames);
    // identity model: only what the 8 kHz model cannot carry (above 4 kHz) or the low bins hold is left
    assert.ok(maxAbs(backing.left) < 0.02);
  });

  it("gives a lossy input at another rate outputs of its decoded length, and progress ends at 1", async () => {
    const inputPath = join(dir, "in-16k.mp3");
    const wavPath = join(dir, "in-16k.wav");
    await writeStereo(wavPath, testMix(41_234, 16000), 16000);
    await new Promise<void>((resolve, reject) =>
      execFile("ffmpeg", ["-v", "error", "-y", "-i", wavPath, "-c:a", "libmp3lame", "-b:a", "96k", inputPath], (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    const fractions: number[] = [];
    const result = await separateFile({
      inputPath,
      model: await registry.load("identity"),
      outDir: join(dir, "out-16k"),
      onProgress: (p) => fractions.push(p.fraction ?? -1),
    });
    assert.equal(result.sampleRate, 16000);
    assert.equal(result.frames, 41_234);
    assert.equal((await readStereo(result.stems.vocals.wav!, 16000)).left.length, 41_234);
    assert.equal(fractions.at(-1), 1);
  });

  it("gives the same result with and without the STFT helper thread", async () => {
    const model = await registry.load("identity");
    const input = testMix(30_000);
    async function* blocks() {
      const block = new Float32Array(2 * input.left.length);
      for (let i = 0; i < input.left.length; i++) {
        block[2 * i] = input.left[i];
        block[2 * i + 1] = input.right[i];
      }
      yield block;
    }
    const collect = async (helperThread: boolean) => {
      const parts: Float32Array[] = [];
      for await (const out of separateStream(blocks(), model, { helperThread })) parts.push(out.stems.vocals);
      return parts;
    };
    const before = stftHelperRequests();
    const alone = await collect(false);
    assert.equal(stftHelperRequests(), before, "without the helper thread nothing is sent to it");
    const shared = await collect(true);
    // The helper falls back to the calling thread when it cannot run: check it did the work.
    assert.ok(stftHelperRequests() > before, "the helper thread did the STFT work");
    assert.equal(shared.length, alone.length);
    // the two halves are summed in another order: equal up to float rounding
    shared.forEach((part, i) => {
      assert.equal(part.length, alone[i].length);
      for (let k = 0; k < part.length; k++) assert.ok(Math.abs(part[k] - alone[i][k]) < 1e-6);
    });
  });

  it("gives the same stems with the session on its own thread or on the calling thread", async () => {
    const input = testMix(60_000);
    const local = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1, thread: false });
    try {
      const threaded = await separate("identity", input);
      const inPlace = await separateFile({
        inputPath: join(dir, `in-identity-${input.left.length}-${RATE}.wav`),
        model: await local.load("identity"),
        outDir: join(dir, "out-local"),
      });
      assert.deepEqual(Object.keys(inPlace.stems), Object.keys(threaded.result.stems));
      for (const stem of Object.keys(inPlace.stems)) {
        const other = await readStereo(inPlace.stems[stem].wav!, RATE);
        assert.deepEqual(other.left, threaded.stems[stem].left, stem);
        assert.deepEqual(other.right, threaded.stems[stem].right, stem);
      }
    } finally {
      await local.close();
    }
  });

  it("gives the same result for any batch size and caps the batch at a fixed batch dimension", async () => {
    await model({ name: "fixed-batch", fixedBatch: 1 });
    const input = testMix(25_000);
    const one = await separate("identity", input, { batchSize: 1 });
    const three = await separate("identity", input, { batchSize: 3 });
    assert.ok(snrDb(one.stems.vocals, three.stems.vocals) > 130);
    const fixed = await separate("fixed-batch", input, { batchSize: 4 });
    assert.ok(snrDb(one.stems.vocals, fixed.stems.vocals) > 130);
  });

  it("reports monotonic progress up to 1 and timings", async () => {
    const fractions: number[] = [];
    const { result } = await separate("identity", testMix(30_000), { onProgress: (p) => fractions.push(p.fraction ?? -1) });
    assert.ok(fractions.length > 3);
    for (let i = 1; i < fractions.length; i++) assert.ok(fractions[i] >= fractions[i - 1]);
    assert.equal(fractions.at(-1), 1);
    const t: SeparateFileResult["timings"] = result.timings;
    for (const key of ["decodeMs", "inferenceMs", "postMs", "encodeMs", "totalMs"] as const) assert.ok(t[key] > 0, key);
    // the calling thread's own time adds up; inference runs alongside it
    assert.ok(t.decodeMs + t.inferenceWaitMs + t.postMs + t.encodeMs <= t.totalMs * 1.01);
    assert.ok(t.inferenceMs <= t.totalMs);
  });

  it("rejects an input without samples with AudioDecodeError and writes nothing", async () => {
    const inputPath = join(dir, "empty.wav");
    await new Promise<void>((resolve, reject) =>
      execFile(
        "ffmpeg",
        ["-v", "error", "-y", "-f", "lavfi", "-i", "anullsrc=r=8000:cl=stereo", "-t", "0", "-c:a", "pcm_s16le", inputPath],
        (err) => (err ? reject(err) : resolve()),
      ),
    );
    await assert.rejects(
      separateFile({ inputPath, model: await registry.load("identity"), outDir: join(dir, "out-empty") }),
      AudioDecodeError,
    );
    assert.deepEqual(await readdir(join(dir, "out-empty")), []);
  });

  it("stops and removes partial files when aborted", async () => {
    const controller = new AbortController();
    await assert.rejects(
      separate("identity", testMix(80_000), {
        batchSize: 1,
        signal: controller.signal,
        onProgress: (p) => {
          if (p.processedFrames > 5_000) controller.abort();
        },
      }),
      { name: "AbortError" },
    );
    assert.deepEqual(await readdir(join(dir, "out-identity")), []);
  });

  async function writeMono(path: string, mono: Float32Array) {
    const stereoPath = `${path}.stereo.wav`;
    await writeStereo(stereoPath, { left: mono, right: mono }, RATE);
    await new Promise<void>((resolve, reject) =>
      execFile("ffmpeg", ["-v", "error", "-y", "-i", stereoPath, "-af", "pan=mono|c0=c0", "-c:a", "pcm_f32le", path], (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  }
});

function trimmed(x: Stereo): Stereo {
  return { left: x.left.slice(FADE, -FADE), right: x.right.slice(FADE, -FADE) };
}
