import assert from "node:assert/strict";
import { mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { catalogue, files, folder, mirror, rmvpe, sha, vocals } from "./model-mirror.ts";
import { repoRoot, runCli } from "./run-cli.ts";

test("models pull NAME downloads through the mirror, checks size, SHA-256 and UVR hash, installs, and `available` shows it installed", async () => {
  const dir = await folder();
  const models = join(dir, "models");
  const { base, seen } = await mirror(files);
  const env = { MIXDOWN_MODEL_CATALOGUE: await catalogue(dir), MIXDOWN_MODEL_MIRROR: base };
  const before = await runCli(["models", "available", "--models-dir", models], env);
  assert.equal(before.code, 0, before.stderr);
  assert.match(before.stdout, /^Test_Vocal\s+no\s+mdx\s+vocals\s+13 MB\s+vocals SDR 7\.9\s+vocal separation$/m);
  assert.match(before.stdout, /^rmvpe\s+no\s+rmvpe\s+-\s+\?\s+-\s+RVC voice conversion$/m);

  const pulled = await runCli(["models", "pull", "Test_Vocal", "--models-dir", models], env);
  assert.equal(pulled.code, 0, pulled.stderr);
  assert.match(pulled.stderr, new RegExp(`downloading ${base}/uvr/Test_Vocal\\.onnx`));
  assert.match(pulled.stderr, /Test_Vocal\.onnx: 13\.\d MB, verified \(size, SHA-256, UVR hash\)/);
  assert.match(pulled.stdout, /^installed Test_Vocal \(mdx; stems vocals, backing\)/);
  assert.deepEqual(
    seen.map((s) => s.path),
    ["/uvr/Test_Vocal.onnx"],
  );
  assert.deepEqual((await readdir(models)).sort(), [".downloads", "Test_Vocal.json", "Test_Vocal.onnx"]);
  assert.deepEqual(await readdir(join(models, ".downloads")), []);

  const after = await runCli(["models", "available", "--models-dir", models], env);
  assert.match(after.stdout, /^Test_Vocal\s+yes\s/m);
  const again = await runCli(["models", "pull", "Test_Vocal", "--models-dir", models], env);
  assert.equal(again.code, 0);
  assert.match(again.stderr, /Test_Vocal is installed already/);
  assert.equal(seen.length, 1);
});

test("a pull cut after part of the file resumes with Range where it stopped", async () => {
  const dir = await folder();
  const models = join(dir, "models");
  const cutPartial = join(models, ".downloads/Test_Vocal/Test_Vocal.onnx.part");
  const { base, seen } = await mirror(files, { cutFirst: "/uvr/Test_Vocal.onnx", cutPartial });
  const env = { MIXDOWN_MODEL_CATALOGUE: await catalogue(dir), MIXDOWN_MODEL_MIRROR: base };
  const pulled = await runCli(["models", "pull", "Test_Vocal", "--models-dir", models], env);
  assert.equal(pulled.code, 0, pulled.stderr);
  // The second request asks for the rest only: from the byte the first one broke off at.
  assert.equal(seen.length, 2);
  const resumedAt = Number(/^bytes=(\d+)-$/.exec(seen[1]!.range ?? "")?.[1]);
  assert.equal(resumedAt, 1024 * 1024, `resumed at ${seen[1]!.range}`);
  assert.match(pulled.stderr, new RegExp(`(broke off|closed) at byte ${resumedAt}`));
  assert.match(pulled.stderr, new RegExp(`resuming at byte ${resumedAt}`));
  assert.ok(await stat(join(models, "Test_Vocal.onnx")));
});

test("a server without Range support: the cut download is fetched whole again and still verifies", async () => {
  const dir = await folder();
  const models = join(dir, "models");
  const cutPartial = join(models, ".downloads/Test_Vocal/Test_Vocal.onnx.part");
  const { base, seen } = await mirror(files, { cutFirst: "/uvr/Test_Vocal.onnx", cutPartial, noRange: true });
  const env = { MIXDOWN_MODEL_CATALOGUE: await catalogue(dir), MIXDOWN_MODEL_MIRROR: base };
  const pulled = await runCli(["models", "pull", "Test_Vocal", "--models-dir", models], env);
  assert.equal(pulled.code, 0, pulled.stderr);
  assert.equal(seen.length, 2);
  assert.match(pulled.stdout, /^installed Test_Vocal/);
});

test("a wrong SHA-256 is refused naming both hashes, and nothing is installed or left", async () => {
  const dir = await folder();
  const models = join(dir, "models");
  const { base } = await mirror(files);
  const wrong = "ab".repeat(32);
  const env = { MIXDOWN_MODEL_CATALOGUE: await catalogue(dir, wrong), MIXDOWN_MODEL_MIRROR: base };
  const pulled = await runCli(["models", "pull", "Test_Vocal", "--models-dir", models], env);
  assert.equal(pulled.code, 1);
  assert.match(pulled.stderr, new RegExp(`cannot pull Test_Vocal: .*SHA-256 mismatch: expected ${wrong}, got ${sha(vocals)}`));
  assert.deepEqual(await readdir(models), [".downloads"]);
  assert.deepEqual(await readdir(join(models, ".downloads", "Test_Vocal")), []);
});

test("a 404 names the URL; an unknown name points at `models available`", async () => {
  const dir = await folder();
  const models = join(dir, "models");
  const { base } = await mirror({});
  const env = { MIXDOWN_MODEL_CATALOGUE: await catalogue(dir), MIXDOWN_MODEL_MIRROR: base };
  const pulled = await runCli(["models", "pull", "Test_Vocal", "--models-dir", models], env);
  assert.equal(pulled.code, 1);
  assert.match(pulled.stderr, new RegExp(`${base}/uvr/Test_Vocal\\.onnx: HTTP 404 \\(not found\\)`));
  const unknown = await runCli(["models", "pull", "nope", "--models-dir", models], env);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /not in the catalogue: nope \(see \.\/mixdown\.sh models available/);
});

test("a file: mirror works, and `voices pull rmvpe` installs the pitch model where the worker looks", async () => {
  const dir = await folder();
  const local = join(dir, "mirror");
  await mkdir(join(local, "lj1995/resolve/main"), { recursive: true });
  await writeFile(join(local, "lj1995/resolve/main/rmvpe.onnx"), rmvpe);
  const models = join(dir, "models");
  const env = { MIXDOWN_MODEL_CATALOGUE: await catalogue(dir), MIXDOWN_MODEL_MIRROR: pathToFileURL(local).href };
  const pulled = await runCli(["voices", "pull", "rmvpe", "--models-dir", models], env);
  assert.equal(pulled.code, 0, pulled.stderr);
  assert.deepEqual(await readFile(join(models, "voices/rmvpe.onnx")), rmvpe);
  const listed = await runCli(["models", "available", "--models-dir", models], env);
  assert.match(listed.stdout, /^rmvpe\s+yes\s/m);
  const bad = await runCli(["voices", "pull", "Test_Vocal", "--models-dir", models], env);
  assert.equal(bad.code, 2);
});

test("models pull URL installs any file, says the SHA-256 to pin it by, and refuses a wrong --sha256", async () => {
  const dir = await folder();
  const models = join(dir, "models");
  const { base } = await mirror({ "/x/My_Model.onnx": vocals });
  const geometry = ["--n-fft", "4096", "--dim-f", "1024", "--dim-t", "256"];
  const url = `${base}/x/My_Model.onnx`;
  const wrong = await runCli(["models", "pull", url, "--sha256", "0".repeat(64), "--models-dir", models, ...geometry], {});
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /SHA-256 mismatch/);
  const pulled = await runCli(["models", "pull", url, "--name", "mine", "--models-dir", models, ...geometry], {});
  assert.equal(pulled.code, 0, pulled.stderr);
  assert.match(pulled.stderr, new RegExp(`pin it next time with --sha256 ${sha(vocals)}`));
  assert.match(pulled.stdout, /^installed mine \(mdx/);
});

test("a demucs bag pulls as demucs publishes it (its yaml and each member named <sig>-<first 8 hex of its SHA-256>.th), and installs as one model", async () => {
  const dir = await folder();
  const models = join(dir, "models");
  const th = await readFile(join(repoRoot, "packages/separation/test/fixtures/htdemucs/htdemucs-tiny.th"));
  const prefix = sha(th).slice(0, 8);
  const yaml = Buffer.from("models: ['aaaa1111', 'bbbb2222']\nweights: [[1., 1., 0., 0.], [0., 0., 1., 1.]]\n");
  const { base, seen } = await mirror({
    "/demucs/bag/tiny_bag.yaml": yaml,
    [`/demucs/hybrid_transformer/aaaa1111-${prefix}.th`]: th,
    [`/demucs/hybrid_transformer/bbbb2222-${prefix}.th`]: th,
  });
  const member = (sig: string) => ({
    name: `${sig}-${prefix}.th`,
    url: `https://dl.example.org/demucs/hybrid_transformer/${sig}-${prefix}.th`,
    sizeBytes: null,
    sha256: null,
    sha256Prefix: prefix,
    noHash: "demucs publishes the first 8 hex digits of the SHA-256 in the name",
  });
  const path = join(dir, "bag-catalogue.json");
  await writeFile(
    path,
    JSON.stringify({
      version: 1,
      models: [
        {
          name: "tiny_bag",
          kind: "separation",
          family: "htdemucs",
          stems: ["drums", "bass", "other", "vocals"],
          description: "two copies of the tiny HTDemucs fixture as a bag",
          importFile: "tiny_bag.yaml",
          files: [
            {
              name: "tiny_bag.yaml",
              url: "https://raw.example.org/demucs/bag/tiny_bag.yaml",
              sizeBytes: yaml.length,
              sha256: sha(yaml),
            },
            member("aaaa1111"),
            member("bbbb2222"),
          ],
          licence: "MIT",
          source: "https://dl.example.org/",
          reported: [],
          evidence: ["this test"],
        },
      ],
    }),
  );
  const pulled = await runCli(["models", "pull", "tiny_bag", "--models-dir", models], {
    MIXDOWN_MODEL_CATALOGUE: path,
    MIXDOWN_MODEL_MIRROR: base,
  });
  assert.equal(pulled.code, 0, pulled.stderr);
  assert.equal(seen.length, 3);
  assert.match(pulled.stderr, new RegExp(`aaaa1111-${prefix}\\.th: .* verified \\(SHA-256 prefix\\)`));
  assert.match(pulled.stdout, /^installed tiny_bag \(htdemucs; stems drums, bass, other, vocals/);
  const manifest = JSON.parse(await readFile(join(models, "tiny_bag.json"), "utf8")) as { members: unknown[] };
  assert.equal(manifest.members.length, 2);
});
