import assert from "node:assert/strict";
import { copyFile, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot, runCli } from "./run-cli.ts";

test("models quantize installs NAME-int8 beside a BS-RoFormer, which then separates; a second time, and a model with no linear layer, are refused", async () => {
  const dir = await mkdtemp(join(tmpdir(), "mixdown-quantize-"));
  try {
    const fixture = join(repoRoot, "packages/separation/test/fixtures/bs_roformer");
    for (const file of ["bs_roformer.json", "bs_roformer.onnx"]) await copyFile(join(fixture, file), join(dir, file));
    for (const file of ["vocals.json", "vocals.onnx"]) await copyFile(join(repoRoot, "models", file), join(dir, file));
    const q = await runCli(["models", "quantize", "bs_roformer", "--models-dir", dir], {});
    assert.equal(q.code, 0, q.stderr);
    assert.match(q.stdout, /installed bs_roformer-int8: 12 linear layers in int8, 1\.5 MB -> \d\.\d MB/);
    const manifest = JSON.parse(await readFile(join(dir, "bs_roformer-int8.json"), "utf8"));
    assert.equal(manifest.file, "bs_roformer-int8.onnx");

    const song = join(dir, "song.wav");
    const { spawnSync } = await import("node:child_process");
    spawnSync("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-ac", "2", "-ar", "44100", song]);
    const out = join(dir, "out");
    const s = await runCli(["separate", song, "--model", "bs_roformer-int8", "--models-dir", dir, "--out", out], {});
    assert.equal(s.code, 0, s.stderr);
    assert.ok((await readFile(join(out, "vocals.wav"))).length > 3 * 44100 * 2 * 4, "no 3 s of float stereo vocals");

    const again = await runCli(["models", "quantize", "bs_roformer", "--models-dir", dir], {});
    assert.equal(again.code, 1);
    assert.match(again.stderr, /a model named "bs_roformer-int8" is installed already/);
    // the shipped MDX-Net models are convolutions only
    const convolutions = await runCli(["models", "quantize", "vocals", "--models-dir", dir], {});
    assert.equal(convolutions.code, 1);
    assert.match(convolutions.stderr, /vocals: the model has no linear layer/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
