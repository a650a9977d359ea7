import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ModelRegistry, separateFile } from "../src/index.ts";
import { writeTestModel } from "./support/mdx-test-models.ts";
import { faded, readStereo, snrDb, tones, writeStereo, type Stereo } from "./support/signals.ts";

const RATE = 44100;
/** UVR's common geometry: 261120-sample chunks (5.9 s), 2048 trimmed per side */
const GEOMETRY = { sampleRate: RATE, nFft: 4096, hopLength: 1024, dimT: 256 } as const;

describe("identity models at the real MDX-Net geometry (n_fft 4096, hop 1024, dim_t 256)", () => {
  let dir: string;
  let registry: ModelRegistry;
  // 3.4 chunks: three seams and a partial last chunk
  const frames = 3 * 192_768 + 70_001;
  const fade = 8192;
  let low: Stereo;
  let high: Stereo;
  let mixPath: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mixdown-geometry-test-"));
    registry = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1 });
    await writeTestModel(dir, { ...GEOMETRY, name: "full", dimF: 2049 });
    await writeTestModel(dir, { ...GEOMETRY, name: "cut", dimF: 1024 });
    low = {
      left: faded(
        tones(frames, RATE, [
          { freq: 220, amp: 0.3 },
          { freq: 1250, amp: 0.2 },
          { freq: 7000, amp: 0.05 },
        ]),
        fade,
      ),
      right: faded(
        tones(frames, RATE, [
          { freq: 330, amp: 0.3 },
          { freq: 3100, amp: 0.1 },
        ]),
        fade,
      ),
    };
    high = {
      left: faded(tones(frames, RATE, [{ freq: 15_000, amp: 0.05 }]), fade),
      right: faded(tones(frames, RATE, [{ freq: 13_000, amp: 0.04 }]), fade),
    };
    mixPath = join(dir, "mix.wav");
    await writeStereo(
      mixPath,
      { left: low.left.map((v, i) => v + high.left[i]), right: low.right.map((v, i) => v + high.right[i]) },
      RATE,
    );
  });
  after(async () => {
    await registry.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("full band (dim_f = n_fft/2+1): the primary equals the input at >60 dB", async () => {
    const result = await separateFile({ inputPath: mixPath, model: await registry.load("full"), outDir: join(dir, "full") });
    assert.equal(result.frames, frames);
    const vocals = await readStereo(result.stems.vocals.wav!, RATE);
    const input = await readStereo(mixPath, RATE);
    const snr = snrDb(input, vocals);
    assert.ok(snr > 60, `${snr.toFixed(1)} dB`);
  });

  it("cut band (dim_f 1024 of 2049): below 11 kHz reconstructed at >60 dB, the rest is in the secondary", async () => {
    const result = await separateFile({ inputPath: mixPath, model: await registry.load("cut"), outDir: join(dir, "cut") });
    const vocals = await readStereo(result.stems.vocals.wav!, RATE);
    const backing = await readStereo(result.stems.backing.wav!, RATE);
    assert.equal(vocals.left.length, frames);
    assert.ok(snrDb(low, vocals) > 60, `primary ${snrDb(low, vocals).toFixed(1)} dB`);
    assert.ok(snrDb(high, backing) > 60, `secondary ${snrDb(high, backing).toFixed(1)} dB`);
  });
});
