import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { writeFloatWav } from "@mixdown/analysis/testing";
import { probeAudio } from "@mixdown/audio";
import { melodyScore, singMelody } from "@mixdown/harmony/testing";
import { parseMusicalKey } from "@mixdown/jobs";
import { runCli } from "./run-cli.ts";

describe("mixdown harmony", () => {
  let dir: string;
  let input: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "mixdown-harmony-cli-"));
    input = path.join(dir, "lead.wav");
    const score = melodyScore(parseMusicalKey("A minor")!, { centre: 62, count: 8, noteSeconds: 0.35, seed: 4 });
    await writeFloatWav(input, [singMelody(score)], 44100);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test("--key --interval --direction writes the harmony and the lead with it at the input's length, and says what ran", async () => {
    const out = path.join(dir, "out");
    const result = await runCli(
      ["harmony", input, "--key", "A minor", "--interval", "third", "--direction", "above", "--out", out, "--format", "flac"],
      {},
    );
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual((await readdir(out)).sort(), ["lead.harmony.flac", "lead.with-harmony.flac"]);
    assert.match(result.stdout, /^a third above in A minor \(given\), \d+ notes: [\d.]+ s of audio in [\d.]+ s$/m);
    const source = await probeAudio(input);
    for (const file of ["lead.harmony.flac", "lead.with-harmony.flac"]) {
      const written = await probeAudio(path.join(out, file));
      assert.equal(written.sampleRate, 44100);
      assert.equal(written.frames, source.frames, file);
    }
  });

  test("a bad key, interval or direction, or no --out: exit 2 naming it, with the usage", async () => {
    const out = path.join(dir, "bad");
    for (const [args, message] of [
      [["--key", "H dorian"], /--key must be a tonic and major or minor/],
      [["--interval", "fifth"], /--interval must be third or sixth, got "fifth"/],
      [["--direction", "up"], /--direction must be above or below, got "up"/],
    ] as const) {
      const result = await runCli(["harmony", input, ...args, "--out", out], {});
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, message);
      assert.match(result.stderr, /usage: mixdown harmony/);
    }
    const noOut = await runCli(["harmony", input], {});
    assert.equal(noOut.code, 2);
    assert.match(noOut.stderr, /--out is required/);
  });
});
