import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { probeAudio } from "@mixdown/audio";
import { runCli } from "./run-cli.ts";

const run = promisify(execFile);

describe("mixdown repair", () => {
  let dir: string;
  let input: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "mixdown-repair-cli-"));
    const voice = path.join(dir, "voice.wav");
    await run("espeak-ng", ["-v", "en-us", "-w", voice, "The take needs a little help."]);
    // a spoken take at 44.1 kHz stereo under pink noise, as flac: resampled to RNNoise's 48 kHz and back
    input = path.join(dir, "take.flac");
    await run("ffmpeg", [
      "-v",
      "error",
      "-i",
      voice,
      "-f",
      "lavfi",
      "-i",
      "anoisesrc=c=pink:r=44100:a=0.03:seed=5",
      "-filter_complex",
      "[0]aresample=44100[v];[v][1]amix=inputs=2:duration=first:normalize=0,aformat=channel_layouts=stereo",
      "-c:a",
      "flac",
      input,
    ]);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test("--dereverb --denoise writes the repaired take at the input's rate and length, and says what ran", async () => {
    const out = path.join(dir, "out");
    const result = await runCli(["repair", input, "--denoise", "--dereverb", "--out", out, "--format", "flac"], {});
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(await readdir(out), ["take.repaired.flac"]);
    assert.match(result.stdout, /^dereverb, then denoise: [\d.]+ s of audio in [\d.]+ s \(models: vocalsplit\)/m);
    const [source, repaired] = await Promise.all([probeAudio(input), probeAudio(path.join(out, "take.repaired.flac"))]);
    assert.equal(repaired.sampleRate, 44100);
    assert.equal(repaired.frames, source.frames);
  });

  test("no step, or no --out: exit 2 with the usage", async () => {
    const none = await runCli(["repair", input, "--out", path.join(dir, "none")], {});
    assert.equal(none.code, 2);
    assert.match(none.stderr, /name at least one step: --dereverb, --denoise/);
    const noOut = await runCli(["repair", input, "--denoise"], {});
    assert.equal(noOut.code, 2);
    assert.match(noOut.stderr, /--out is required/);
  });
});
