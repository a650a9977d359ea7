import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { createPrismaClient, type PrismaClient } from "@mixdown/db";
import { startTestStack, type TestStack } from "@mixdown/devstack";
import { writeRvcSignatureModel } from "@mixdown/voice";
import { lastLine, repoRoot, runCli } from "./run-cli.ts";

let stack: TestStack;
let prisma: PrismaClient;
let env: Record<string, string>;
let home: string;
const fixture = (p: string) => path.join(repoRoot, "packages/voice/test/fixtures", p);

before(async () => {
  stack = await startTestStack({ storage: "local" });
  prisma = createPrismaClient(stack.env.DATABASE_URL!);
  home = await mkdtemp(path.join(os.tmpdir(), "mixdown-cli-test-"));
  env = { DATABASE_URL: stack.env.DATABASE_URL!, MIXDOWN_HOME: home, STORAGE_LOCAL_DIR: path.join(home, "storage") };
});
after(async () => {
  await prisma?.$disconnect();
  await stack?.stop();
  await rm(home, { recursive: true, force: true });
});

describe("mixdown voices import", () => {
  test("an RVC ONNX with --index: both stored, the index named in the row's metadata", async () => {
    const onnx = path.join(home, "rvc.onnx");
    await writeFile(onnx, writeRvcSignatureModel(40000));
    const r = await runCli(
      ["voices", "import", onnx, "--title", "Indexed", "--public", "--index", fixture("rvc-index/ivf-flat.index")],
      env,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      lastLine(r.stdout),
      /^Imported voice model \d+ "Indexed" \(rvc, 40000 Hz, public, index of 3000 64-d features\)\.$/,
    );
    const row = await prisma.voiceModel.findFirstOrThrow({ where: { title: "Indexed" } });
    assert.equal((row.metadata as { indexKey?: string }).indexKey, `voice-models/${row.id}/model.index`);
    assert.deepEqual(
      await readFile(path.join(home, "storage", `voice-models/${row.id}/model.index`)),
      await readFile(fixture("rvc-index/ivf-flat.index")),
    );
  });

  test("refuses an index that is not RVC's, and a torch file that is not an RVC model, storing nothing", async () => {
    const before = await prisma.voiceModel.count();
    const onnx = path.join(home, "rvc2.onnx");
    await writeFile(onnx, writeRvcSignatureModel(40000));
    const badIndex = await runCli(
      ["voices", "import", onnx, "--title", "X", "--public", "--index", fixture("rvc-index/flat-l2.index")],
      env,
    );
    assert.equal(badIndex.code, 1);
    assert.match(badIndex.stderr, /flat-l2\.index: the file is a faiss IndexFlatL2 \(IxF2\)/);
    const demucs = path.join(repoRoot, "packages/separation/test/fixtures/import-probes/htdemucs.th");
    const notRvc = await runCli(["voices", "import", demucs, "--title", "X", "--public"], env);
    assert.equal(notRvc.code, 1);
    assert.match(notRvc.stderr, /htdemucs\.th: not an RVC voice model: expected RVC's exported \.pth/);
    assert.equal(await prisma.voiceModel.count(), before);
  });

  test("an RVC .pth: converted once by Mixdown's synthesizer and published ready at the file's own rate, leaving no scratch files", async () => {
    const tmp = path.join(home, "tmp");
    await mkdir(tmp);
    const r = await runCli(["voices", "import", fixture("rvc-pth/rvc-v1-40k.pth"), "--title", "From pth", "--public"], {
      ...env,
      TMPDIR: tmp,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(lastLine(r.stdout), /^Imported voice model \d+ "From pth" \(rvc, 40000 Hz, public\)\.$/);
    const row = await prisma.voiceModel.findFirstOrThrow({ where: { title: "From pth" } });
    assert.equal(row.state, "ready");
    assert.deepEqual((row.metadata as { rvc?: unknown }).rvc, { version: "v1", f0: 1, sampleRate: 40000, speakers: 3 });
    // The converted ONNX went to storage; its scratch folder under TMPDIR is gone (tsx keeps its own cache there).
    assert.deepEqual(
      (await readdir(tmp)).filter((n) => n.startsWith("mixdown-")),
      [],
    );
  });
});
