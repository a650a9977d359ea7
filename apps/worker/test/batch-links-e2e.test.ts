import assert from "node:assert/strict";
import { createWriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { after, before, describe, it } from "node:test";
import { testFilesDir } from "@mixdown/devstack";
import { getJson, makeAudio, startDeployment, waitUntil, zipNames, type Deployment } from "../testing/harness.ts";

const MB = 1024 * 1024;

/**
 * Batches of links against a local HTTP server this test starts on 127.0.0.2 (never the
 * internet), as the voice model link tests do: WEBHOOK_DENIED_NETWORKS denies 127.0.0.1 only.
 */
describe("a batch of links", () => {
  let d: Deployment;
  let server: Server;
  let base: string;
  const files = new Map<string, Buffer>();
  const hits = new Map<string, number>();
  /** `/slow.wav`'s first request sends half the file, then holds the rest until the test lets it go. */
  let holding: (() => void) | undefined;
  let halfSent = false;

  before(async () => {
    const wav = await makeAudio("good.wav", ["-f", "lavfi", "-i", "sine=f=440:d=1.5", "-ac", "2", "-ar", "44100"]);
    const mp3 = await makeAudio("take.mp3", [
      "-f",
      "lavfi",
      "-i",
      "sine=f=330:d=1.5",
      "-ac",
      "2",
      "-ar",
      "44100",
      "-b:a",
      "128k",
    ]);
    const slow = await makeAudio("slow.wav", ["-f", "lavfi", "-i", "sine=f=220:d=2", "-ac", "2", "-ar", "44100"]);
    files.set("/songs/good.wav", await readFile(wav));
    files.set("/songs/take.mp3", await readFile(mp3));
    files.set("/songs/slow.wav", await readFile(slow));
    files.set("/songs/notes.wav", Buffer.from("these are notes, not audio, whatever the name says"));
    files.set("/songs/huge.wav", Buffer.concat([(await readFile(wav)).subarray(0, 44), Buffer.alloc(3 * MB)]));
    server = createServer((req, res) => {
      const path = req.url ?? "/";
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const body = files.get(path);
      if (!body) return res.writeHead(404).end("no such file");
      res.writeHead(200, { "content-length": body.length });
      if (path === "/songs/slow.wav" && hits.get(path) === 1) {
        res.write(body.subarray(0, body.length / 2), () => (halfSent = true));
        holding = () => res.end(body.subarray(body.length / 2));
        res.on("close", () => (holding = undefined));
        return;
      }
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.2", resolve));
    base = `http://127.0.0.2:${(server.address() as AddressInfo).port}`;
    d = await startDeployment({
      WORKER_QUEUES: "separation",
      WEBHOOK_DENIED_NETWORKS: "127.0.0.1/32",
      MAX_SEPARATION_UPLOAD_BYTES: String(2 * MB),
    });
  });
  after(async () => {
    holding?.();
    await d?.stop();
    server?.closeAllConnections();
    server?.close();
  });

  const createBatch = async (links: string[]) => {
    const res = await fetch(`${d.baseUrl}/api/kits/v1/batches`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.key}`, "content-type": "application/json" },
      body: JSON.stringify({ kind: "vocal-separation", urls: links }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    return (await res.json()) as any;
  };
  const ended = async (id: number) => {
    let batch: any;
    await waitUntil(`batch ${id} ends`, async () => (batch = await getJson(d, `batches/${id}`)).status !== "running");
    return batch;
  };

  it("a batch of a wav, an mp3 and a 404 ends with 2 jobs done and 1 failed naming the 404, and its zip holds the 2", async () => {
    const links = [`${base}/songs/good.wav`, `${base}/songs/take.mp3`, `${base}/songs/missing.wav`];
    const created = await createBatch(links);
    assert.deepEqual(created.rejected, []);
    const batch = await ended(created.id);
    assert.deepEqual(batch.counts, { running: 0, success: 2, error: 1, cancelled: 0 });
    assert.equal(batch.status, "error");
    const [good, take, missing] = batch.jobs;
    assert.deepEqual(
      [good.status, take.status, missing.status, missing.fileName],
      ["success", "success", "error", "missing.wav"],
    );
    assert.match(missing.errorMessage, /^inputUrl: .*missing\.wav.*404/);

    // Each input stored under its job's upload key and described as an upload is; its record names the link.
    const rows = await d.prisma.separationJob.findMany({ where: { batchId: batch.id }, orderBy: { id: "asc" } });
    assert.deepEqual(
      rows.map((r) => [r.inputUrl, r.inputFormat]),
      [
        [links[0], "wav"],
        [links[1], "mp3"],
        [links[2], "wav"],
      ],
    );
    for (const row of rows.slice(0, 2)) {
      assert.ok(await d.api.ctx.storage.exists(row.inputKey), `${row.inputKey} is stored`);
      assert.ok(row.audioSeconds! > 1.4 && row.audioSeconds! < 1.7, `audioSeconds ${row.audioSeconds}`);
    }
    const usage = await d.prisma.usageRecord.findMany({ where: { rowId: { in: rows.map((r) => r.id) } } });
    assert.deepEqual(usage.map((u) => u.rowId).sort(), [rows[0]!.id, rows[1]!.id].sort());
    assert.ok(usage.every((u) => u.seconds > 1.4));
    const record = await getJson(d, `vocal-separations/${good.id}`);
    assert.equal(record.inputUrl, links[0]);
    assert.ok(record.vocalAudioFileUrl);

    const res = await fetch(`${d.baseUrl}/api/kits/v1/batches/${batch.id}/zip`, {
      headers: { authorization: `Bearer ${d.key}` },
    });
    assert.equal(res.status, 200);
    const dir = await testFilesDir("links-zip-");
    await pipeline(Readable.fromWeb(res.body as never), createWriteStream(join(dir, "batch.zip")));
    const folders = new Set((await zipNames(join(dir, "batch.zip"))).map((name) => name.split("/")[0]));
    assert.deepEqual([...folders].sort(), ["001-good", "002-take"]);
  });

  it("a link that is not audio, or past MAX_SEPARATION_UPLOAD_BYTES, fails its own job with the reason", async () => {
    const created = await createBatch([`${base}/songs/notes.wav`, `${base}/songs/huge.wav`, `${base}/songs/good.wav`]);
    const batch = await ended(created.id);
    assert.deepEqual(batch.counts, { running: 0, success: 1, error: 2, cancelled: 0 });
    const [notes, huge] = batch.jobs;
    assert.match(
      notes.errorMessage,
      /^inputUrl: the file at .*notes\.wav is not wav, webm, mp3 or flac audio \(decided from its content/,
    );
    assert.match(huge.errorMessage, /^inputUrl: .*huge\.wav/);
    assert.match(huge.errorMessage, /2097152|2 MB|larger|too large/i);
    // a failed download stores nothing under the job's key
    const rows = await d.prisma.separationJob.findMany({ where: { id: { in: [notes.id, huge.id] } } });
    for (const row of rows) assert.equal(await d.api.ctx.storage.exists(row.inputKey), false);
  });

  it("a worker killed during a download downloads it again once, and the job ends done once", async () => {
    const created = await createBatch([`${base}/songs/slow.wav`]);
    const id: number = created.jobs[0].id;
    await waitUntil("half of the link is sent", () => halfSent, 120_000);
    d.worker.kill("SIGKILL");
    holding?.();
    d.worker = d.startWorker();
    const batch = await ended(created.id);
    assert.deepEqual(batch.counts, { running: 0, success: 1, error: 0, cancelled: 0 });
    assert.equal(hits.get("/songs/slow.wav"), 2, "downloaded again once, by the next attempt");
    const row = await d.prisma.separationJob.findUniqueOrThrow({ where: { id } });
    assert.equal(await d.prisma.separationJob.count({ where: { batchId: created.id } }), 1, "no job made twice");
    assert.equal((await d.api.ctx.storage.list("uploads/vocal-separation/")).filter((k) => k === row.inputKey).length, 1);
    const usage = await d.prisma.usageRecord.findMany({ where: { rowId: id, jobKind: "vocal_separation" } });
    assert.equal(usage.length, 1, "counted once");
  });
});
