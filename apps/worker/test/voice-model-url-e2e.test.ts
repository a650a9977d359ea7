import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { testFilesDir } from "@mixdown/devstack";
import { writeZip } from "../../../packages/voice/test/zip-writer.ts";
import {
  getJson,
  makeAudio,
  postForm,
  startDeployment,
  waitForEnd,
  waitForQueueEntryEnd,
  type Deployment,
} from "../testing/harness.ts";

const fixture = (path: string) => fileURLToPath(new URL(`../../../packages/voice/test/fixtures/${path}`, import.meta.url));
const MB = 1024 * 1024;

/**
 * Imports from links against a local HTTP server this test starts on 127.0.0.2 (never the
 * internet). WEBHOOK_DENIED_NETWORKS denies 127.0.0.1 only: the server's own address is allowed,
 * while `localhost` (which resolves to 127.0.0.1 here) and literal 127.0.0.1 links are not.
 */
describe("voice models imported from a link", () => {
  let d: Deployment;
  let server: Server;
  let base: string;
  let port: number;
  const files = new Map<string, Buffer>();
  const hits = new Map<string, number>();
  let contentVec: string;

  before(async () => {
    const dir = await testFilesDir("url-");
    const pth = await readFile(fixture("rvc-pth/rvc-v2-48k.pth"));
    const index = await readFile(fixture("rvc-index/ivf-flat-768.index"));
    const zip = async (name: string, entries: Parameters<typeof writeZip>[1]) => {
      await writeZip(join(dir, name), entries);
      files.set(`/${name}`, await readFile(join(dir, name)));
    };
    files.set("/voices/singer.pth", pth);
    files.set("/voices/singer.index", index);
    files.set("/voices/export.onnx", await readFile(fixture("rvc-pth/rvc-v1-40k.onnx")));
    files.set("/voices/export-v2.onnx", await readFile(fixture("rvc-pth/rvc-v2-48k.onnx")));
    files.set("/voices/big.pth", randomBytes(9 * MB));
    files.set("/voices/notes.txt", Buffer.from("not a model"));
    await zip("singer.zip", [
      { name: "Singer/", data: Buffer.alloc(0), stored: true },
      { name: "Singer/Singer.pth", data: pth },
      { name: "Singer/added_IVF256_Flat_nprobe_1_Singer_v2.index", data: index },
      { name: "__MACOSX/Singer/._Singer.pth", data: Buffer.from("resource fork") },
      { name: ".DS_Store", data: Buffer.from("finder") },
    ]);
    await zip("slip.zip", [
      { name: "Singer.pth", data: pth },
      { name: "../../evil.index", data: index },
    ]);
    // 64 MB of zeros that the headers say are 1000 bytes: 64 KB to download.
    await zip("bomb.zip", [{ name: "Singer.pth", data: Buffer.alloc(64 * MB), declaredSize: 1000 }]);
    server = createServer((req, res) => {
      const path = req.url ?? "/";
      hits.set(path, (hits.get(path) ?? 0) + 1);
      if (path.startsWith("/redirect-to-denied"))
        return res.writeHead(302, { location: `http://127.0.0.1:${port}/voices/singer.pth` }).end();
      const body = files.get(path);
      if (!body) return res.writeHead(404).end("no such file");
      res.writeHead(200, { "content-length": body.length }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.2", resolve));
    port = (server.address() as AddressInfo).port;
    base = `http://127.0.0.2:${port}`;
    d = await startDeployment({
      WORKER_QUEUES: "voice-model-build,voice-model-media",
      MAX_VOICE_MODEL_UPLOAD_BYTES: String(8 * MB),
      WEBHOOK_DENIED_NETWORKS: "127.0.0.1/32",
      // Not installed, as on a default install: what the records and the demo render say about it.
      VOICE_CONTENTVEC_MODEL: (contentVec = join(dir, "absent", "vec-768-layer-12.onnx")),
      VOICE_RMVPE_MODEL: join(dir, "absent", "rmvpe.onnx"),
    });
  });
  after(async () => {
    await d?.stop();
    server?.close();
  });

  const importLink = async (parts: Record<string, string>) => {
    const res = await postForm(d, "voice-models", { metadata: JSON.stringify({ title: "From a link" }), ...parts });
    assert.equal(res.status, 201, await res.clone().text());
    const model = (await res.json()) as any;
    assert.equal(model.state, "pending");
    return model.id as number;
  };
  /** The model's record once the build job has ended it (polled). */
  const settled = async (id: number, timeoutMs = 120_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const model = await getJson(d, `voice-models/${id}`);
      if (model.state !== "pending") return model;
      if (Date.now() > deadline) throw new Error(`voice model ${id} still pending after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const stored = async (id: number) => (await d.api.ctx.storage.list(`voice-models/${id}/`)).sort();

  it("imports a shared zip (one .pth and its .index, folder and macOS litter ignored) from a link to ready", async () => {
    const id = await importLink({ modelUrl: `${base}/singer.zip` });
    const model = await settled(id);
    assert.equal(model.state, "ready", model.errorMessage);
    assert.deepEqual([model.architecture, model.sampleRate, model.usable], ["rvc", 48000, true]);
    const row = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id } });
    assert.equal(row.sourceUrl, `${base}/singer.zip`);
    assert.equal(row.fileKey, `voice-models/${id}/model.onnx`);
    const metadata = row.metadata as any;
    assert.deepEqual(metadata.rvc, { version: "v2", f0: 1, sampleRate: 48000, speakers: 3 });
    assert.equal(metadata.indexKey, `voice-models/${id}/model.index`);
    assert.equal(metadata.index.dim, 768);
    assert.deepEqual(metadata.unpacked, {
      model: "Singer/Singer.pth",
      index: "Singer/added_IVF256_Flat_nprobe_1_Singer_v2.index",
    });
    assert.deepEqual(await stored(id), [`voice-models/${id}/model.index`, `voice-models/${id}/model.onnx`]);
    assert.deepEqual(
      model.missingAssets.map((a: any) => [a.asset, a.required, a.install]),
      [
        ["contentvec", true, "./mixdown.sh models pull hubert"],
        ["rmvpe", false, "./mixdown.sh models pull rmvpe"],
      ],
      "the record says what the model still needs",
    );

    // Its demo cannot be rendered without ContentVec: given up at the first attempt, the reason naming the command.
    const deadline = Date.now() + 90_000;
    let rendered = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id } });
    while (rendered.mediaError === null && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      rendered = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id } });
    }
    assert.match(
      rendered.mediaError ?? "",
      /ContentVec model .* which is missing: install it with `\.\/mixdown\.sh models pull hubert`/,
    );
    const media = await waitForQueueEntryEnd(d.api.ctx.queues.queue("voice-model-media"), `voice-model-media-${id}`);
    assert.equal(media.attemptsMade, 1, "a missing asset is not retried");
  });

  it("ends a conversion whose RVC model's ContentVec is gone when it runs error at its first attempt, naming the file and the command", async () => {
    // An RVC v2 export: ready without a PyTorch conversion, needing the 768-d ContentVec.
    const id = await importLink({ modelUrl: `${base}/voices/export-v2.onnx` });
    const model = await settled(id);
    assert.equal(model.state, "ready", model.errorMessage);
    const sound = await makeAudio("speech.wav", ["-f", "lavfi", "-i", "sine=f=220:d=2", "-ar", "48000"]);
    // Installed when the conversion is created (the create checks for it), gone when a worker runs it.
    await mkdir(dirname(contentVec), { recursive: true });
    await writeFile(contentVec, "placeholder");
    let created: Response;
    const deadline = Date.now() + 15_000;
    for (;;) {
      // The API looks at the file at most every 2 s: refused (422) until it has seen it.
      created = await postForm(d, "voice-conversions", { voiceModelId: String(id), soundFile: { path: sound } });
      if (created.status !== 422 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    await rm(contentVec);
    assert.equal(created.status, 201, await created.clone().text());
    const jobId = ((await created.json()) as { id: number }).id;

    d.env.WORKER_QUEUES = "voice-conversion";
    d.startWorker();
    const ended = await waitForEnd(d, `voice-conversions/${jobId}`);
    assert.equal(ended.status, "error");
    assert.match(
      ended.errorMessage,
      /RVC models need the ContentVec model .*absent\/vec-768-layer-12\.onnx .*which is missing: install it with `\.\/mixdown\.sh models pull hubert`/,
    );
    assert.doesNotMatch(ended.errorMessage, /attempts/);
    // BullMQ records the attempt after the row has ended: wait for it rather than read it early.
    const queued = await d.api.ctx.queues.queue("voice-conversion").getJob(`voice-conversion-${jobId}`);
    const settledBy = Date.now() + 10_000;
    while ((await queued!.getState()) !== "failed" && Date.now() < settledBy) await new Promise((r) => setTimeout(r, 100));
    const final = await d.api.ctx.queues.queue("voice-conversion").getJob(`voice-conversion-${jobId}`);
    assert.equal(await final!.getState(), "failed");
    assert.equal(final!.attemptsMade, 1, "a missing model file is not retried (JOB_ATTEMPTS is 8 here)");
  });

  it("imports a .pth with an indexUrl, and an RVC .onnx export, from links", async () => {
    const pth = await importLink({ modelUrl: `${base}/voices/singer.pth`, indexUrl: `${base}/voices/singer.index` });
    const onnx = await importLink({ modelUrl: `${base}/voices/export.onnx` });
    const [a, b] = [await settled(pth), await settled(onnx)];
    assert.equal(a.state, "ready", a.errorMessage);
    assert.equal(
      ((await d.prisma.voiceModel.findUniqueOrThrow({ where: { id: pth } })).metadata as any).indexKey,
      `voice-models/${pth}/model.index`,
    );
    assert.equal(b.state, "ready", b.errorMessage);
    assert.deepEqual([b.architecture, b.sampleRate], ["rvc", 40000]);
    assert.deepEqual(((await d.prisma.voiceModel.findUniqueOrThrow({ where: { id: onnx } })).metadata as any).rvc, {
      version: "v1",
    });
  });

  it("refuses a zip with a ../ path (zip-slip): the model ends failed with the reason and nothing is stored", async () => {
    const id = await importLink({ modelUrl: `${base}/slip.zip` });
    const model = await settled(id);
    assert.equal(model.state, "failed");
    assert.match(
      model.errorMessage,
      /^modelUrl: the zip has an entry outside its folder \(invalid relative path: \.\.\/\.\.\/evil\.index\)/,
    );
    assert.deepEqual(await stored(id), []);
  });

  it("refuses a zip bomb (headers that lie about the size): failed at once, nothing stored", async () => {
    const id = await importLink({ modelUrl: `${base}/bomb.zip` });
    const model = await settled(id);
    assert.equal(model.state, "failed");
    assert.match(
      model.errorMessage,
      /^modelUrl: the zip's Singer\.pth unpacks to more than the 1000 bytes its header states \(a zip bomb\?\); refused$/,
    );
    assert.deepEqual(await stored(id), []);
  });

  it("ends a model failed at once, without retries, for a 404, a file over the limit, a file that is not a model, and a zip index beside an indexUrl", async () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [
        { modelUrl: `${base}/voices/gone.pth` },
        /^modelUrl: http:\/\/127\.0\.0\.2:\d+\/voices\/gone\.pth: HTTP 404 \(not found\)$/,
      ],
      [{ modelUrl: `${base}/voices/big.pth` }, /^modelUrl: .*big\.pth is 9437184 bytes, over the limit of 8388608$/],
      [{ modelUrl: `${base}/voices/notes.txt` }, /^modelUrl: the file is not an ONNX model/],
      [
        { modelUrl: `${base}/singer.zip`, indexUrl: `${base}/voices/singer.index` },
        /holds a feature index \(Singer\/added_IVF256_Flat_nprobe_1_Singer_v2\.index\) and indexUrl names another \(http:.*singer\.index\): send one of them$/,
      ],
    ];
    for (const [parts, reason] of cases) {
      const id = await importLink(parts);
      const model = await settled(id);
      assert.equal(model.state, "failed", JSON.stringify(parts));
      assert.match(model.errorMessage, reason);
      assert.deepEqual(await stored(id), []);
    }
    assert.equal(hits.get("/voices/gone.pth"), 1, "a 404 is not retried");
  });

  it("applies WEBHOOK_DENIED_NETWORKS: a literal denied address is a 422 at create; a redirect to one, or a name resolving to one, ends the model failed and is never fetched", async () => {
    const before = await d.prisma.voiceModel.count();
    for (const [parts, message] of [
      [
        { modelUrl: `http://127.0.0.1:${port}/voices/singer.pth` },
        /^modelUrl points to 127\.0\.0\.1, in a network this service does not download from/,
      ],
      [{ modelUrl: `file:///etc/passwd` }, /^modelUrl must use http or https, not file$/],
      [{ modelUrl: `https://user:pw@example.com/a.pth` }, /^modelUrl must not contain credentials/],
      [{ modelUrl: `${base}/singer.zip`, indexUrl: `http://127.0.0.1:${port}/i.index` }, /^indexUrl points to 127\.0\.0\.1/],
    ] as const) {
      const res = await postForm(d, "voice-models", { metadata: JSON.stringify({ title: "Nope" }), ...parts });
      assert.equal(res.status, 422);
      assert.match(((await res.json()) as any).message, message);
    }
    assert.equal(await d.prisma.voiceModel.count(), before, "no row");

    const hitsBefore = hits.get("/voices/singer.pth") ?? 0;
    const redirected = await settled(await importLink({ modelUrl: `${base}/redirect-to-denied` }));
    assert.equal(redirected.state, "failed");
    assert.match(
      redirected.errorMessage,
      /redirects to http:\/\/127\.0\.0\.1:\d+\/voices\/singer\.pth: modelUrl points to 127\.0\.0\.1/,
    );
    const named = await settled(await importLink({ modelUrl: `http://localhost:${port}/voices/singer.pth` }));
    assert.equal(named.state, "failed");
    assert.match(
      named.errorMessage,
      /^modelUrl: localhost resolves to 127\.0\.0\.1, in a denied network \(WEBHOOK_DENIED_NETWORKS\)$/,
    );
    assert.equal(hits.get("/voices/singer.pth") ?? 0, hitsBefore, "the denied address was never requested");
  });
});
