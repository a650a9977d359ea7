import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { folder, mirror } from "./model-mirror.ts";
import { repoRoot, runCli } from "./run-cli.ts";

// A Piper voice published as rhasspy/piper-voices publishes one (its .onnx and .onnx.json, with
// size and MD5), here the random-weight fixture voice of packages/voice/test/fixtures/piper.
const fixture = join(repoRoot, "packages/voice/test/fixtures/piper/tiny-en_US.onnx");
const onnx = await readFile(fixture);
const config = await readFile(`${fixture}.json`);
const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");
const files = {
  "/rhasspy/piper-voices/resolve/v1.0.0/en/en_US/tiny/x_low/tiny-en_US.onnx": onnx,
  "/rhasspy/piper-voices/resolve/v1.0.0/en/en_US/tiny/x_low/tiny-en_US.onnx.json": config,
};

async function piperCatalogue(dir: string, onnxMd5 = md5(onnx)): Promise<string> {
  const path = join(dir, "catalogue.json");
  const file = (name: string, body: Buffer, hash: string) => ({
    name,
    url: `https://hf.example.org/rhasspy/piper-voices/resolve/v1.0.0/en/en_US/tiny/x_low/${name}`,
    sizeBytes: body.length,
    sha256: null,
    md5: hash,
    noHash: "rhasspy/piper-voices publishes each file's size and MD5 (voices.json), no SHA-256",
  });
  await writeFile(
    path,
    JSON.stringify({
      version: 1,
      models: [
        {
          name: "piper-tiny-en_US",
          kind: "tts-voice",
          family: "piper",
          description: "a random-weight Piper voice (packages/voice/test/fixtures/piper)",
          importFile: "tiny-en_US.onnx",
          importConfig: "tiny-en_US.onnx.json",
          files: [file("tiny-en_US.onnx", onnx, onnxMd5), file("tiny-en_US.onnx.json", config, md5(config))],
          licence: "MIT",
          source: "https://hf.example.org/",
          reported: [],
          evidence: ["this test"],
        },
      ],
    }),
  );
  return path;
}

test("models pull piper-NAME checks size and MD5 and installs the voice and its config in TTS_PIPER_DIR", async () => {
  const dir = await folder();
  const models = join(dir, "models");
  const { base, seen } = await mirror(files);
  const env = { MIXDOWN_MODEL_CATALOGUE: await piperCatalogue(dir), MIXDOWN_MODEL_MIRROR: base };
  const before = await runCli(["models", "available", "--models-dir", models], env);
  assert.match(before.stdout, /^piper-tiny-en_US\s+no\s+piper\s+-\s+\d+ MB\s+-\s+text to speech$/m);

  const pulled = await runCli(["models", "pull", "piper-tiny-en_US", "--models-dir", models], env);
  assert.equal(pulled.code, 0, pulled.stderr);
  assert.match(pulled.stderr, /tiny-en_US\.onnx: \d\.\d MB, verified \(size, MD5\)/);
  assert.match(pulled.stdout, /^installed piper-tiny-en_US: .*tts\/tiny-en_US\.onnx \(Piper voice, espeak-ng en-us, 22050 Hz\)/m);
  assert.equal(seen.length, 2);
  assert.deepEqual((await readdir(join(models, "tts"))).sort(), ["tiny-en_US.onnx", "tiny-en_US.onnx.json"]);
  assert.deepEqual(await readFile(join(models, "tts", "tiny-en_US.onnx")), onnx);
  const after = await runCli(["models", "available", "--models-dir", models], env);
  assert.match(after.stdout, /^piper-tiny-en_US\s+yes\s/m);
});

test("a Piper voice whose MD5 does not match is refused naming both, and nothing is installed", async () => {
  const dir = await folder();
  const models = join(dir, "models");
  const { base } = await mirror(files);
  const wrong = "0".repeat(32);
  const env = { MIXDOWN_MODEL_CATALOGUE: await piperCatalogue(dir, wrong), MIXDOWN_MODEL_MIRROR: base };
  const pulled = await runCli(["models", "pull", "piper-tiny-en_US", "--models-dir", models], env);
  assert.notEqual(pulled.code, 0);
  assert.match(pulled.stderr, new RegExp(`MD5 mismatch: expected ${wrong}, got ${md5(onnx)}`));
  assert.deepEqual(await readdir(join(models, "tts")).catch(() => []), []);
});
