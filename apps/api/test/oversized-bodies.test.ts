// A body over its limit is answered 413, and every client reads that answer: the service keeps
// reading (and discarding) what the client still sends, within a bound, before it closes, as web
// servers' lingering close does; a server that answers and closes at once makes a client that is
// still sending fail on EPIPE or ECONNRESET without ever seeing the 413. Three real clients, over
// real sockets: Node's fetch, curl and Python's requests (Debian's python3-requests), 20 tries each,
// a JSON body and a multipart upload.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import net, { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { startHarness, type Harness } from "./helpers.ts";

const run = promisify(execFile);
const TRIES = 20;
/** The multipart limit set here (MAX_SEPARATION_UPLOAD_BYTES), and what the clients send: 16 times it. */
const UPLOAD_LIMIT = 1024 * 1024;

let h: Harness;
let base: string;
let auth: string;
let dir: string;
let json: string;
let upload: string;

before(async () => {
  h = await startHarness("local", { MAX_SEPARATION_UPLOAD_BYTES: String(UPLOAD_LIMIT) });
  await h.app.listen({ host: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/api/kits/v1`;
  auth = `Bearer ${(await h.newCaller()).key}`;
  dir = await mkdtemp(join(tmpdir(), "mixdown-oversized-"));
  // 16 MiB of JSON (the JSON body limit is 1 MiB) and a 16 MiB "song".
  json = join(dir, "big.json");
  await writeFile(json, JSON.stringify({ modelId1: 1, modelId2: 2, alpha: 0.5, title: "x".repeat(16 * 1024 * 1024) }));
  upload = join(dir, "song.wav");
  await writeFile(upload, Buffer.alloc(16 * UPLOAD_LIMIT, 1));
});
after(async () => {
  await h?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

type Client = (kind: "json" | "multipart") => Promise<number>;

const clients: Record<string, Client> = {
  async "Node's fetch"(kind) {
    const { openAsBlob } = await import("node:fs");
    if (kind === "json") {
      const res = await fetch(`${base}/voice-blender`, {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json" },
        body: await openAsBlob(json),
      });
      await res.arrayBuffer();
      return res.status;
    }
    const form = new FormData();
    form.append("inputFile", await openAsBlob(upload), "song.wav");
    const res = await fetch(`${base}/vocal-separations`, { method: "POST", headers: { authorization: auth }, body: form });
    await res.arrayBuffer();
    return res.status;
  },
  async curl(kind) {
    const args =
      kind === "json"
        ? ["-H", "content-type: application/json", "--data-binary", `@${json}`, `${base}/voice-blender`]
        : ["-F", `inputFile=@${upload}`, `${base}/vocal-separations`];
    const { stdout } = await run("curl", [
      "-sS",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}",
      "-H",
      `authorization: ${auth}`,
      ...args,
    ]);
    return Number(stdout);
  },
  async "Python requests"(kind) {
    const script = [
      "import sys, requests",
      "kind, url, auth, path = sys.argv[1:]",
      "with open(path, 'rb') as f:",
      "    if kind == 'json':",
      "        r = requests.post(url, data=f, headers={'authorization': auth, 'content-type': 'application/json'})",
      "    else:",
      "        r = requests.post(url, files={'inputFile': ('song.wav', f)}, headers={'authorization': auth})",
      "print(r.status_code)",
    ].join("\n");
    const python = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    const [url, path] = kind === "json" ? [`${base}/voice-blender`, json] : [`${base}/vocal-separations`, upload];
    const { stdout } = await run(python, ["-c", script, kind, url, auth, path]);
    return Number(stdout.trim());
  },
};

describe("a body over its limit: 413 read by every client", () => {
  for (const [name, client] of Object.entries(clients)) {
    for (const kind of ["json", "multipart"] as const) {
      test(`${name}, ${kind}: ${TRIES} of ${TRIES} read the 413`, async () => {
        const outcomes: string[] = [];
        for (let i = 0; i < TRIES; i++)
          outcomes.push(await client(kind).then(String, (error: Error) => error.message.split("\n")[0]!));
        assert.deepEqual(outcomes, Array(TRIES).fill("413"));
      });
    }
  }
});

test("a client that stops sending an oversized body gets its 413 once the lingering time (10 s) is up, and the connection is closed", async () => {
  const { port } = h.app.server.address() as AddressInfo;
  const started = Date.now();
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.write(
        `POST /api/kits/v1/voice-blender HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n`,
      );
      socket.write(Buffer.alloc(2 * 1024 * 1024, 32)); // then nothing more
    });
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
    socket.on("error", reject);
    setTimeout(() => socket.destroy(new Error("no answer within 30 s")), 30_000).unref();
  });
  const seconds = (Date.now() - started) / 1000;
  assert.match(answer, /^HTTP\/1\.1 413 /);
  assert.match(answer, /\r\nconnection: close\r\n/i);
  assert.ok(seconds >= 9 && seconds < 20, `answered after ${seconds} s`);
});
