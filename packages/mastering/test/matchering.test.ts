import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { concatSamples, decodeToPcm } from "@mixdown/audio";
import { matcheringConfig, matchReference, MatcheringInputError, type MatcheringConfig } from "../src/index.ts";

const fixtures = join(import.meta.dirname, "fixtures", "matchering");

async function readStereo(path: string): Promise<Float32Array> {
  const blocks: Float32Array[] = [];
  for await (const block of decodeToPcm(path, { sampleRate: 44100 })) blocks.push(block);
  return concatSamples(blocks, (n) => new Float32Array(n));
}

/** 10·log10(Σ expected² / Σ (actual − expected)²), dB */
function snrDb(actual: Float32Array, expected: Float32Array): number {
  assert.equal(actual.length, expected.length, "lengths differ");
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < expected.length; i++) {
    signal += expected[i] ** 2;
    noise += (actual[i] - expected[i]) ** 2;
  }
  return 10 * Math.log10(signal / noise);
}

describe("reference mastering matches upstream Matchering's output", () => {
  let scratch: string;
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), "mastering-test-"));
  });
  after(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  async function master(target: string, reference: string, config?: MatcheringConfig) {
    const blocks: Float32Array[] = [];
    const progress: number[] = [];
    const summary = await matchReference(join(fixtures, target), join(fixtures, reference), {
      scratchDir: scratch,
      config,
      write: async (block) => void blocks.push(block.slice()),
      onProgress: (f) => progress.push(f),
    });
    return { summary, samples: concatSamples(blocks, (n) => new Float32Array(n)), progress };
  }

  const cases = [
    {
      name: "a loud stereo song to a quiet mono reference (the reference's normalisation undone on the result)",
      target: "song-loud-stereo.wav",
      reference: "reference-quiet-mono.wav",
      upstream: "upstream-loud-to-quiet-mono.wav",
      config: undefined,
      check: (s: { finalAmplitudeCoefficient: number }) => assert.ok(s.finalAmplitudeCoefficient < 0.5),
    },
    {
      name: "a quiet mono song to a loud stereo reference (raised 23 dB, no sample over the threshold: not limited)",
      target: "song-quiet-mono.wav",
      reference: "reference-loud-stereo.wav",
      upstream: "upstream-quiet-mono-to-loud.wav",
      config: undefined,
      check: (s: { limiterApplied: boolean; rmsCoefficient: number }) => assert.ok(!s.limiterApplied && s.rmsCoefficient > 10),
    },
    {
      name: "a loud song to a loud reference, cut into 1.5 s pieces (loudest-piece selection)",
      target: "song-loud-stereo.wav",
      reference: "reference-loud-stereo.wav",
      upstream: "upstream-loud-to-loud-pieces-1.5.wav",
      config: matcheringConfig({ maxPieceSize: 1.5 }),
      check: () => {},
    },
  ];
  for (const c of cases) {
    test(`${c.name}: SNR against upstream >= 60 dB`, async () => {
      const { summary, samples, progress } = await master(c.target, c.reference, c.config);
      const expected = await readStereo(join(fixtures, c.upstream));
      const snr = snrDb(samples, expected);
      console.log(`${c.upstream}: SNR ${snr.toFixed(1)} dB`);
      assert.ok(snr >= 60, `SNR ${snr.toFixed(1)} dB`);
      c.check(summary as never);
      assert.equal(progress.at(-1), 1);
    });
  }

  test("refuses a target equal to its reference, naming it", async () => {
    await assert.rejects(master("song-loud-stereo.wav", "song-loud-stereo.wav"), (err) => {
      assert.ok(err instanceof MatcheringInputError);
      assert.equal(err.field, "reference");
      return true;
    });
  });
});
