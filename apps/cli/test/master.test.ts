import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { probeAudio } from "@mixdown/audio";
import { repoRoot, runCli } from "./run-cli.ts";

const fixtures = path.join(repoRoot, "packages/mastering/test/fixtures/matchering");

describe("mixdown master", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "mixdown-master-"));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test("--reference masters a local file to a reference: 24-bit, 16-bit and mp3 at 44.1 kHz stereo, loudness before and after", async () => {
    const out = path.join(dir, "ref");
    const song = path.join(fixtures, "song-quiet-mono.wav");
    const result = await runCli(
      ["master", song, "--reference", path.join(fixtures, "reference-loud-stereo.wav"), "--out", out],
      {},
    );
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual((await readdir(out)).sort(), ["master-16bit.wav", "master.mp3", "master.wav"]);
    const wav = await probeAudio(path.join(out, "master.wav"));
    assert.deepEqual([wav.codec, wav.sampleRate, wav.channels, wav.frames], ["pcm_s24le", 44100, 2, 154350]);
    assert.match(result.stdout, /^before: -[\d.]+ LUFS, LRA [\d.]+ LU, true peak -[\d.]+ dBTP$/m);
    assert.match(result.stdout, /^matchering, [\d.]+ s$/m);
  });

  test("--lufs normalises with loudnorm, keeping the input's rate and channels", async () => {
    const out = path.join(dir, "lufs");
    const result = await runCli(["master", path.join(fixtures, "song-loud-stereo.wav"), "--lufs", "-23", "--out", out], {});
    assert.equal(result.code, 0, result.stderr);
    const wav = await probeAudio(path.join(out, "master-16bit.wav"));
    assert.deepEqual([wav.codec, wav.sampleRate, wav.channels], ["pcm_s16le", 44100, 2]);
    assert.match(result.stdout, /^ffmpeg loudnorm (linear|dynamic), [\d.]+ s$/m);
  });

  test("bad arguments exit 2 naming the problem, writing nothing", async () => {
    const song = path.join(fixtures, "song-loud-stereo.wav");
    for (const [args, message] of [
      [[song, "--out", path.join(dir, "x")], /give --reference REF or --lufs L/],
      [[song, "--lufs", "-14", "--reference", song, "--out", path.join(dir, "x")], /not both/],
      [[song, "--lufs", "-3", "--out", path.join(dir, "x")], /--lufs must be a number from -70 to -5, got "-3"/],
      [[song, "--lufs", "-14"], /--out is required/],
    ] as const) {
      const result = await runCli(["master", ...args], {});
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, message);
    }
    assert.deepEqual((await readdir(dir)).includes("x"), false);
  });
});
