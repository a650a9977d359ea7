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
