import assert from "node:assert/strict";
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot, runCli } from "./run-cli.ts";

test("models list shows each installed separation model's family, stems and size, and why a manifest is not listed", async () => {
  const dir = await mkdtemp(join(tmpdir(), "mixdown-cli-models-"));
  try {
    await copyFile(join(repoRoot, "models/stems.json"), join(dir, "stems.json"));
    await copyFile(join(repoRoot, "models/stems.onnx"), join(dir, "stems.onnx"));
    await writeFile(join(dir, "broken.json"), "{");
    const { code, stdout, stderr } = await runCli(["models", "list", "--models-dir", dir], {});
    assert.equal(code, 0, stderr);
    const lines = stdout.trimEnd().split("\n");
    assert.equal(lines[0], `separation models in ${dir}:`);
    assert.match(lines[1]!, /^name\s+family\s+stems\s+size\s+speed$/);
    assert.match(lines[2]!, /^stems\s+mdx\s+vocals,drums,bass,other\s+13\.2 MB\s+\S/);
    assert.equal(lines.length, 3);
    assert.match(stderr, /not listed: .*broken\.json/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("models without list prints its usage and exits 2", async () => {
  const { code, stderr } = await runCli(["models"], {});
  assert.equal(code, 2);
  assert.match(stderr, /\.\/mixdown\.sh models list/);
});

test("models import installs an MDX-Net ONNX with its geometry given by hand, then lists it; a bad file exits 1 naming the problem", async () => {
  const dir = await mkdtemp(join(tmpdir(), "mixdown-cli-import-"));
  try {
    const args = ["models", "import", join(repoRoot, "models/vocals.onnx"), "--models-dir", dir, "--name", "mine"];
    const geometry = ["--n-fft", "4096", "--dim-f", "1024", "--dim-t", "256"];
    const imported = await runCli([...args, ...geometry], {});
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, /^installed mine \(mdx; stems vocals, backing\) in .*x realtime on the 4 s check\n$/);
    const listed = await runCli(["models", "list", "--models-dir", dir], {});
    assert.match(listed.stdout, /\nmine\s+mdx\s+vocals\s/);

    await writeFile(join(dir, "notes.txt"), "not a model");
    const bad = await runCli(["models", "import", join(dir, "notes.txt"), "--models-dir", dir], {});
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^cannot import: .*notes\.txt: not a PyTorch checkpoint/m);
    const usage = await runCli(["models", "import", "--models-dir", dir], {});
    assert.equal(usage.code, 2);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
