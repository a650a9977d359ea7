import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { createPrismaClient, VoiceModelRepository, type PrismaClient } from "@mixdown/db";
import { startTestStack, type TestStack } from "@mixdown/devstack";
import { writeRvcSignatureModel } from "@mixdown/voice";
import { writeZip } from "../../../packages/voice/test/zip-writer.ts";
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
    assert.equal(row.instrument, false, "a voice unless --instrument");
    assert.equal((row.metadata as { indexKey?: string }).indexKey, `voice-models/${row.id}/model.index`);
    assert.deepEqual(
      await readFile(path.join(home, "storage", `voice-models/${row.id}/model.index`)),
      await readFile(fixture("rvc-index/ivf-flat.index")),
    );
  });

  test("--instrument marks the model an instrument: the instruments=true list has it, the voices list does not", async () => {
    const onnx = path.join(home, "violin.onnx");
    await writeFile(onnx, writeRvcSignatureModel(40000));
    const r = await runCli(["voices", "import", onnx, "--title", "My violin", "--public", "--instrument"], env);
    assert.equal(r.code, 0, r.stderr);
    const row = await prisma.voiceModel.findFirstOrThrow({ where: { title: "My violin" } });
    assert.equal(row.instrument, true);
    assert.equal(row.state, "ready");
    const page = { page: 1, perPage: 100, order: "asc" as const };
    const models = new VoiceModelRepository(prisma);
    assert.ok(
      (await models.list(0, false, page, true)).rows.some((m) => m.id === row.id),
      "listed with instruments=true",
    );
    assert.ok(!(await models.list(0, false, page, false)).rows.some((m) => m.id === row.id), "not among the voices");
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

  test("a URL: a shared zip downloaded from a local server, its .pth and .index unpacked and imported; a zip with a ../ path refused, storing nothing", async () => {
    const dir = await mkdtemp(path.join(home, "zips-"));
    const pth = await readFile(fixture("rvc-pth/rvc-v2-48k.pth"));
    const index = await readFile(fixture("rvc-index/ivf-flat-768.index"));
    await writeZip(path.join(dir, "Singer.zip"), [
      { name: "Singer/Singer.pth", data: pth },
      { name: "Singer/added_IVF256_Flat_nprobe_1_Singer_v2.index", data: index },
      { name: "__MACOSX/Singer/._Singer.pth", data: Buffer.from("fork") },
    ]);
    await writeZip(path.join(dir, "slip.zip"), [
      { name: "Singer.pth", data: pth },
      { name: "../outside.txt", data: Buffer.from("owned") },
    ]);
    const server = createServer(async (req, res) => {
      const body = await readFile(path.join(dir, path.basename(req.url ?? ""))).catch(() => undefined);
      if (!body) return res.writeHead(404).end();
      res.writeHead(200, { "content-length": body.length }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const r = await runCli(["voices", "import", `${base}/Singer.zip`, "--title", "From a link", "--public"], env);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /downloading http:\/\/127\.0\.0\.1:\d+\/Singer\.zip/);
      assert.match(r.stderr, /unpacked Singer\/Singer\.pth and Singer\/added_IVF256_Flat_nprobe_1_Singer_v2\.index/);
      assert.match(
        lastLine(r.stdout),
        /^Imported voice model \d+ "From a link" \(rvc, 48000 Hz, public, index of \d+ 768-d features\)\.$/,
      );
      const row = await prisma.voiceModel.findFirstOrThrow({ where: { title: "From a link" } });
      assert.equal(row.state, "ready");
      const metadata = row.metadata as Record<string, unknown>;
      assert.deepEqual(
        [metadata.url, metadata.fileName, metadata.indexKey],
        [`${base}/Singer.zip`, "Singer.pth", `voice-models/${row.id}/model.index`],
      );

      const before = await prisma.voiceModel.count();
      const slip = await runCli(["voices", "import", `${base}/slip.zip`, "--title", "Slip", "--public"], env);
      assert.equal(slip.code, 1);
      assert.match(
        slip.stderr,
        /slip\.zip: the zip has an entry outside its folder \(invalid relative path: \.\.\/outside\.txt\)/,
      );
      const missing = await runCli(["voices", "import", `${base}/gone.pth`, "--title", "Gone", "--public"], env);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /gone\.pth: HTTP 404 \(not found\)/);
      assert.equal(await prisma.voiceModel.count(), before);
    } finally {
      server.close();
    }
  });
});

describe("mixdown voices list", () => {
  test("lists every model with what it still needs installed, naming `./mixdown.sh models pull hubert`", async () => {
    const models = await mkdtemp(path.join(home, "models-"));
    const r = await runCli(["voices", "list"], { ...env, MODELS_DIR: models });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split("\n");
    assert.match(lines[0]!, /^ID\s+STATE\s+ARCH\s+RATE\s+OWNER\s+TITLE\s+NEEDS$/);
    const fromPth = lines.find((l) => /From pth/.test(l))!;
    assert.match(
      fromPth,
      /ready\s+rvc\s+40000\s+public\s+From pth\s+contentvec-v1 \(\.\/mixdown\.sh models pull hubert\); recommended: rmvpe \(\.\/mixdown\.sh models pull rmvpe\)$/,
    );
    const fromLink = lines.find((l) => /From a link/.test(l))!;
    assert.match(fromLink, /rvc\s+48000\s+public\s+From a link\s+contentvec \(\.\/mixdown\.sh models pull hubert\)/);
    assert.ok(
      lines.includes(
        "RVC v2 models need the ContentVec model (VOICE_CONTENTVEC_MODEL), which is not installed: install it with `./mixdown.sh models pull hubert`",
      ),
      r.stdout,
    );
    await mkdir(path.join(models, "voices"));
    for (const f of ["vec-768-layer-12.onnx", "vec-256-layer-9.onnx"]) await writeFile(path.join(models, "voices", f), "model");
    const installed = await runCli(["voices", "list"], { ...env, MODELS_DIR: models, VOICE_PITCH_METHOD: "yin" });
    assert.equal(installed.code, 0, installed.stderr);
    assert.match(
      installed.stdout.split("\n").find((l) => /From a link/.test(l))!,
      /From a link\s+-$/,
    );
  });
});
