import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { probeAudio } from "@mixdown/audio";
import { runCli } from "./run-cli.ts";

const run = promisify(execFile);

/** The files a single input's run writes into --out, its record of what it made (.mixdown-separate.json) aside. */
async function stemFiles(out: string): Promise<string[]> {
  return (await readdir(out)).filter((name) => !name.startsWith(".")).sort();
}

describe("mixdown separate", () => {
  let dir: string;
  let input: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "mixdown-separate-"));
    input = path.join(dir, "song.mp3");
    // 3 s at 48 kHz: the default model runs at 44.1 kHz, so the way back to the input rate is used too.
    await run("ffmpeg", [
      "-v",
      "error",
      "-f",
      "lavfi",
      "-i",
      "sine=f=220:r=48000:d=3",
      "-f",
      "lavfi",
      "-i",
      "anoisesrc=c=pink:r=48000:d=3:a=0.05",
      "-filter_complex",
      "[0][1]amix=inputs=2,aformat=channel_layouts=stereo",
      "-c:a",
      "libmp3lame",
      "-b:a",
      "192k",
      input,
    ]);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test("separates a local file with a default model into one lossless file per stem, at the input's rate and length, and prints timings", async () => {
    const out = path.join(dir, "out");
    const result = await runCli(["separate", input, "--model", "vocals", "--out", out, "--format", "flac"], {});
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(await stemFiles(out), ["backing.flac", "vocals.flac"]);
    assert.match(result.stdout, /^vocals\t.*vocals\.flac$/m);
    assert.match(result.stdout, /realtime.*model load \d+ ms, decode \d+ ms, inference \d+ ms/);
    const [source, vocals] = await Promise.all([probeAudio(input), probeAudio(path.join(out, "vocals.flac"))]);
    assert.equal(vocals.sampleRate, 48000);
    assert.ok(Math.abs(vocals.frames - source.frames) <= 1152, `${vocals.frames} frames against the mp3's ${source.frames}`);
  });

  test("--model a,b --ensemble runs an ensemble: the stems both models output, combined, with each member's time", async () => {
    const out = path.join(dir, "out-ensemble");
    const result = await runCli(["separate", input, "--model", "vocals,stems", "--ensemble", "avg_mag", "--out", out], {});
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(await stemFiles(out), ["backing.wav", "vocals.wav"]);
    assert.match(result.stdout, /^ensemble \(avg_mag\): vocals [\d.]+ s, stems [\d.]+ s, combining [\d.]+ s$/m);
    const [source, vocals] = await Promise.all([probeAudio(input), probeAudio(path.join(out, "vocals.wav"))]);
    assert.equal(vocals.sampleRate, 48000);
    assert.ok(Math.abs(vocals.frames - source.frames) <= 1152);
    const single = await runCli(["separate", input, "--model", "vocals", "--ensemble", "avg_wave", "--out", out], {});
    assert.equal(single.code, 2);
    assert.match(single.stderr, /--ensemble needs --model naming two or more models/);
    const unknown = await runCli(["separate", input, "--model", "vocals,stems", "--ensemble", "loudest", "--out", out], {});
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /--ensemble must be one of avg_wave, /);
  });

  for (const [family, model, stems] of [
    ["htdemucs", "htdemucs-tiny", ["backing", "bass", "drums", "other", "vocals"]],
    ["mel_band_roformer", "mel_band_roformer", ["backing", "other", "vocals"]],
  ] as const) {
    test(`separates with a ${family} model: one WAV per stem, named after the stem`, async () => {
      const out = path.join(dir, `out-${family}`);
      const modelsDir = fileURLToPath(new URL(`../../../packages/separation/test/fixtures/${family}/`, import.meta.url));
      const result = await runCli(["separate", input, "--model", model, "--models-dir", modelsDir, "--out", out], {});
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(
        await stemFiles(out),
        stems.map((s) => `${s}.wav`),
      );
    });
  }

  test("--shifts runs an HTDemucs model that many more times (chunks counted), and is refused for other families", async () => {
    const out = path.join(dir, "out-shifts");
    const modelsDir = fileURLToPath(new URL("../../../packages/separation/test/fixtures/htdemucs/", import.meta.url));
    const args = [input, "--model", "htdemucs-tiny", "--models-dir", modelsDir, "--out", out, "--format", "flac"];
    // 3 s at a stride of 82687 samples: 2 chunks per run, also when a shift delays it by up to 0.5 s
    const shifted = await runCli(["separate", ...args, "--shifts", "2"], {});
    assert.equal(shifted.code, 0, shifted.stderr);
    assert.match(shifted.stdout, /realtime, 4 chunks\)/);
    const mdx = await runCli(["separate", input, "--model", "vocals", "--out", out, "--shifts", "1"], {});
    assert.equal(mdx.code, 1);
    assert.match(mdx.stderr, /shifts is an HTDemucs option/);
  });

  test("answers 2 with the usage on bad arguments and 1 on an unknown model", async () => {
    for (const argv of [
      [],
      [input],
      [input, "--model", "vocals"],
      [input, "--model", "vocals", "--out", dir, "--format", "mp3"],
      [input, "--bogus"],
      [input, "--model", "vocals", "--out", dir, "--shifts", "-1"],
      [input, "--model", "vocals", "--out", dir, "--shifts", "1.5"],
    ]) {
      const result = await runCli(["separate", ...argv], {});
      assert.equal(result.code, 2, argv.join(" "));
      assert.match(result.stderr, /usage: mixdown separate/);
    }
    const unknown = await runCli(["separate", input, "--model", "nope", "--out", path.join(dir, "x")], {});
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no model named "nope"/);
  });
});
