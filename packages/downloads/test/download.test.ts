import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { downloadFile, DownloadError, uvrModelHash, withMirror } from "../src/index.ts";

const body = randomBytes(300_000);
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const folders: string[] = [];
after(() => Promise.all(folders.map((f) => rm(f, { recursive: true, force: true }))));

async function folder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "mixdown-downloads-test-"));
  folders.push(dir);
  return dir;
}

interface Seen {
  range?: string;
  ifRange?: string;
  path: string;
}

/** A file server whose behaviour each test sets: `handle` answers, `seen` records every request. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse, n: number) => void) {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    seen.push({ path: req.url!, range: req.headers.range, ifRange: req.headers["if-range"] as string | undefined });
    handle(req, res, seen.length);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  after(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

/** Answers `file` honouring `Range` (with an ETag), as a real file server does. */
function sendRanged(req: IncomingMessage, res: ServerResponse, file: Buffer, etag = '"v1"') {
  const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
  const ifRange = req.headers["if-range"];
  if (range && (ifRange === undefined || ifRange === etag)) {
    const start = Number(range[1]);
    if (start >= file.length) {
      res.writeHead(416, { "Content-Range": `bytes */${file.length}` }).end();
      return;
    }
    res.writeHead(206, {
      "Content-Range": `bytes ${start}-${file.length - 1}/${file.length}`,
      "Content-Length": file.length - start,
      ETag: etag,
    });
    res.end(file.subarray(start));
    return;
  }
  res.writeHead(200, { "Content-Length": file.length, ETag: etag }).end(file);
}

/**
 * Sends the head of the file, waits until the client has written all of it to `partial` (so the
 * cut falls exactly there, however loaded the machine is), then drops the connection.
 */
function sendCut(res: ServerResponse, file: Buffer, bytes: number, partial: string) {
  res.writeHead(200, { "Content-Length": file.length, ETag: '"v1"' });
  res.write(file.subarray(0, bytes));
  const deadline = Date.now() + 20_000;
  const check = async () => {
    const size = await stat(partial).then(
      (s) => s.size,
      () => 0,
    );
    if (size >= bytes || Date.now() > deadline) res.socket?.destroy();
    else setTimeout(check, 10);
  };
  void check();
}

test("downloads a file, checks its size and SHA-256, and leaves nothing but the file", async () => {
  const { url } = await serve((req, res) => sendRanged(req, res, body));
  const dir = await folder();
  const target = join(dir, "model.th");
  const got = await downloadFile({ url: `${url}/model.th`, target, expect: { sizeBytes: body.length, sha256: sha(body) } });
  assert.equal(got.sha256, sha(body));
  assert.equal(got.resumedFrom, 0);
  assert.deepEqual(await readFile(target), body);
  assert.deepEqual(await readdir(dir), ["model.th"]);
});

test("a connection dropped halfway is resumed with Range from where the file ends, and the bytes are not fetched twice", async () => {
  const dir = await folder();
  const target = join(dir, "model.th");
  const { url, seen } = await serve((req, res, n) =>
    n === 1 ? sendCut(res, body, 100_000, `${target}.part`) : sendRanged(req, res, body),
  );
  const lines: string[] = [];
  const got = await downloadFile({
    url: `${url}/model.th`,
    target,
    expect: { sha256: sha(body) },
    backoffMs: 10,
    log: (l) => lines.push(l),
  });
  assert.deepEqual(await readFile(target), body);
  assert.equal(got.tries, 2);
  assert.equal(seen.length, 2);
  assert.equal(seen[1]!.range, "bytes=100000-");
  assert.equal(seen[1]!.ifRange, '"v1"');
  assert.match(lines[0]!, /broke off|closed at byte 100000/);
});

test("a download stopped by a failing run resumes in the next run (a restart of the command)", async () => {
  let cut = true;
  const dir = await folder();
  const target = join(dir, "model.th");
  const { url, seen } = await serve((req, res) =>
    cut ? sendCut(res, body, 120_000, `${target}.part`) : sendRanged(req, res, body),
  );
  await assert.rejects(
    downloadFile({ url: `${url}/model.th`, target, attempts: 1 }),
    (err: unknown) => err instanceof DownloadError && err.reason === "network",
  );
  await assert.rejects(stat(target));
  assert.equal((await stat(`${target}.part`)).size, 120_000);
  cut = false;
  const got = await downloadFile({ url: `${url}/model.th`, target, expect: { sha256: sha(body) } });
  assert.equal(got.resumedFrom, 120_000);
  assert.equal(seen.at(-1)!.range, "bytes=120000-");
  assert.deepEqual(await readFile(target), body);
  assert.deepEqual(await readdir(dir), ["model.th"]);
});

test("a server without Range support sends the whole file again, and the result is still exact", async () => {
  const dir = await folder();
  const target = join(dir, "a.bin");
  const { url, seen } = await serve((_req, res, n) =>
    n === 1 ? sendCut(res, body, 50_000, `${target}.part`) : res.writeHead(200, { "Content-Length": body.length }).end(body),
  );
  await downloadFile({ url: `${url}/a.bin`, target, expect: { sha256: sha(body) }, backoffMs: 10 });
  assert.equal(seen[1]!.range, "bytes=50000-");
  assert.deepEqual(await readFile(target), body);
});

test("a file changed upstream since the partial download (If-Range no longer matches) is fetched whole", async () => {
  const v2 = randomBytes(200_000);
  let version = 1;
  const dir = await folder();
  const target = join(dir, "a.bin");
  const { url } = await serve((req, res) =>
    version === 1 ? sendCut(res, body, 80_000, `${target}.part`) : sendRanged(req, res, v2, '"v2"'),
  );
  await assert.rejects(downloadFile({ url: `${url}/a.bin`, target, attempts: 1 }));
  version = 2;
  const got = await downloadFile({ url: `${url}/a.bin`, target, expect: { sha256: sha(v2) } });
  assert.equal(got.sha256, sha(v2));
  assert.deepEqual(await readFile(target), v2);
});

test("a wrong SHA-256 is refused: nothing installed, the download deleted, the message names both hashes", async () => {
  const { url } = await serve((req, res) => sendRanged(req, res, body));
  const dir = await folder();
  const target = join(dir, "model.th");
  const wrong = "0".repeat(64);
  await assert.rejects(
    downloadFile({ url: `${url}/model.th`, target, expect: { sha256: wrong } }),
    (err: unknown) =>
      err instanceof DownloadError && err.reason === "checksum" && err.message.includes(wrong) && err.message.includes(sha(body)),
  );
  assert.deepEqual(await readdir(dir), []);
});

test("a size other than the expected one is refused before the body is read", async () => {
  const { url } = await serve((req, res) => sendRanged(req, res, body));
  const dir = await folder();
  await assert.rejects(
    downloadFile({ url: `${url}/m`, target: join(dir, "m"), expect: { sizeBytes: 1234 } }),
    /has 300000 bytes where 1234 were expected/,
  );
  assert.deepEqual(await readdir(dir), []);
});

test("a 404 fails at once with a message that names the URL", async () => {
  const { url, seen } = await serve((_req, res) => res.writeHead(404).end("no"));
  const dir = await folder();
  await assert.rejects(
    downloadFile({ url: `${url}/gone.ckpt`, target: join(dir, "gone.ckpt"), backoffMs: 10 }),
    (err: unknown) => err instanceof DownloadError && err.reason === "not-found" && err.message.includes(`${url}/gone.ckpt`),
  );
  assert.equal(seen.length, 1);
  assert.deepEqual(await readdir(dir), []);
});

test("5xx answers are retried with backoff, and Retry-After is honoured", async () => {
  const { url, seen } = await serve((req, res, n) =>
    n === 1 ? res.writeHead(503, { "Retry-After": "0" }).end() : n === 2 ? res.writeHead(502).end() : sendRanged(req, res, body),
  );
  const dir = await folder();
  const lines: string[] = [];
  await downloadFile({ url: `${url}/m`, target: join(dir, "m"), backoffMs: 10, log: (l) => lines.push(l) });
  assert.equal(seen.length, 3);
  assert.match(lines[0]!, /HTTP 503; try 2 of 6 in 0.0 s/);
  assert.match(lines[1]!, /HTTP 502; try 3 of 6/);
});

test("a file over maxBytes is refused, whether the server states its length or not, and nothing stays", async () => {
  const { url } = await serve((req, res) => {
    if (req.url === "/chunked") {
      res.writeHead(200);
      res.end(body);
    } else sendRanged(req, res, body);
  });
  const dir = await folder();
  for (const path of ["/stated", "/chunked"]) {
    await assert.rejects(
      downloadFile({ url: `${url}${path}`, target: join(dir, "m"), maxBytes: 100_000 }),
      (err: unknown) => err instanceof DownloadError && err.reason === "too-large",
      path,
    );
    assert.deepEqual(await readdir(dir), [], path);
  }
});

test("redirects are followed, and each address is put to checkUrl", async () => {
  const { url } = await serve((req, res) =>
    req.url === "/a" ? res.writeHead(302, { Location: "/b" }).end() : sendRanged(req, res, body),
  );
  const dir = await folder();
  const asked: string[] = [];
  await downloadFile({ url: `${url}/a`, target: join(dir, "m"), checkUrl: (u) => void asked.push(u.pathname) });
  assert.deepEqual(asked, ["/a", "/b"]);
  await assert.rejects(
    downloadFile({
      url: `${url}/a`,
      target: join(dir, "n"),
      checkUrl: (u) => {
        if (u.pathname === "/b") throw new DownloadError("refused /b", "refused");
      },
    }),
    /refused \/b/,
  );
  await assert.rejects(stat(join(dir, "n")));
});

test("file: URLs and a mirror: the origin is replaced and the path kept", async () => {
  const mirror = await folder();
  await writeFile(join(mirror, "model.onnx"), body);
  await rm(join(mirror, "demucs"), { recursive: true, force: true });
  const url = withMirror("https://dl.example.org/model.onnx?download=true", pathToFileURL(mirror).href);
  assert.equal(url, `${pathToFileURL(mirror).href}/model.onnx`);
  assert.equal(withMirror("https://a.org/x/y.th", "http://mirror.local/base"), "http://mirror.local/base/x/y.th");
  assert.equal(withMirror("https://a.org/x/y.th", undefined), "https://a.org/x/y.th");
  const dir = await folder();
  const got = await downloadFile({
    url,
    target: join(dir, "m.onnx"),
    expect: { sha256: sha(body), uvrHash: await uvrModelHash(join(mirror, "model.onnx")) },
  });
  assert.equal(got.sizeBytes, body.length);
  await assert.rejects(downloadFile({ url: `${url}.missing`, target: join(dir, "x") }), /no such file/);
});

test("UVR's model hash is the MD5 of the last 10,000 KiB, or of the whole file when shorter; demucs's prefix is checked", async () => {
  const dir = await folder();
  const big = randomBytes(10_000 * 1024 + 5000);
  await writeFile(join(dir, "big"), big);
  await writeFile(join(dir, "small"), body);
  const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");
  assert.equal(await uvrModelHash(join(dir, "big")), md5(big.subarray(5000)));
  assert.equal(await uvrModelHash(join(dir, "small")), md5(body));

  const { url } = await serve((req, res) => sendRanged(req, res, body));
  await downloadFile({ url: `${url}/x`, target: join(dir, "ok"), expect: { sha256Prefix: sha(body).slice(0, 8) } });
  await assert.rejects(
    downloadFile({ url: `${url}/x`, target: join(dir, "bad"), expect: { sha256Prefix: "deadbeef" } }),
    /start with deadbeef/,
  );
});
