import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ModelRegistry, outputStemNames, separateFile } from "../src/index.ts";
import { readStereo, snrDb, type Stereo } from "./support/signals.ts";

/**
 * The MSST families against MSST itself: each fixture folder holds a random-weight checkpoint,
 * the ONNX Mixdown's exporter made of it, and what MSST's own `demix` (plus inference.py's
 * instrumental) computed from that checkpoint on the shared 10 s mixture at the yaml's settings
 * (see each folder's README). Chunk seams fall every step of that mixture, so they are covered.
 */
const FIXTURES = join(import.meta.dirname, "fixtures");
const MIXTURE = join(FIXTURES, "msst", "mixture.flac");
const RATE = 44100;

interface Case {
  family: string;
  stems: string[];
  /** an overlap other than the manifest's, in the engine's sense (share of a chunk) */
  wrongOverlap: number;
}

const CASES: Case[] = [
  { family: "bs_roformer", stems: ["vocals", "backing"], wrongOverlap: 0.5 },
  { family: "mel_band_roformer", stems: ["vocals", "other", "backing"], wrongOverlap: 0.75 },
  { family: "mdx23c", stems: ["vocals", "other", "backing"], wrongOverlap: 0.5 },
];

for (const c of CASES) {
  const dir = join(FIXTURES, c.family);
  describe(`${c.family}: Mixdown's ONNX export and streamed demix against MSST's own demix`, () => {
    let registry: ModelRegistry;
    let out: string;

    before(async () => {
      registry = new ModelRegistry({ modelsDir: dir, intraOpThreads: 2 });
      out = await mkdtemp(join(tmpdir(), `mixdown-${c.family}-`));
    });
    after(async () => {
      await registry.close();
      await rm(out, { recursive: true, force: true });
    });

    const run = async (subdir: string, overlap?: number) => {
      const model = await registry.load(c.family);
      assert.deepEqual(outputStemNames(model.manifest), c.stems);
      const result = await separateFile({
        inputPath: MIXTURE,
        model,
        outDir: join(out, subdir),
        outputs: [{ format: "wav", sampleFormat: "f32" }],
        ...(overlap !== undefined ? { overlap } : {}),
      });
      const references: Record<string, Stereo> = {};
      for (const stem of c.stems.filter((s) => s !== "backing"))
        references[stem] = await readStereo(join(dir, `reference-${stem}.flac`), RATE);
      // MSST's inference.py --extract_instrumental: the mixture as read, minus the vocals
      const mixture = await readStereo(MIXTURE, RATE);
      const vocals = references.vocals;
      references.backing = {
        left: mixture.left.map((x, i) => x - vocals.left[i]),
        right: mixture.right.map((x, i) => x - vocals.right[i]),
      };
      const snr: Record<string, number> = {};
      for (const stem of c.stems) snr[stem] = snrDb(references[stem], await readStereo(result.stems[stem].wav!, RATE));
      return snr;
    };

    it("matches MSST on every stem, derived ones included, to at least 60 dB SNR", async (t) => {
      const snr = await run("exact");
      t.diagnostic(`SNR dB ${JSON.stringify(snr)}`);
      for (const stem of c.stems) assert.ok(snr[stem] >= 60, `${stem}: ${snr[stem].toFixed(1)} dB (${JSON.stringify(snr)})`);
    });

    it("falls far below 60 dB with another overlap: the seams are what the test compares", async (t) => {
      const snr = await run("wrong-overlap", c.wrongOverlap);
      t.diagnostic(`SNR dB ${JSON.stringify(snr)}`);
      for (const stem of c.stems.filter((s) => s !== "backing"))
        assert.ok(snr[stem] < 40, `${stem}: ${snr[stem].toFixed(1)} dB with overlap ${c.wrongOverlap}`);
    });
  });
}
