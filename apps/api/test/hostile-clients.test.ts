import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { startHarness, type Harness } from "./helpers.ts";

// Slow and hostile clients over real sockets (node:net) against the API listening on a real port,
// while a well-behaved caller keeps asking GET /healthz and a job list: each hostile request is cut
// off by its stated limit with its status and a JSON body, and the well-behaved caller is answered
// within a bound throughout. The timeouts are set short here; `.env.example` gives the defaults.

const HEADERS_TIMEOUT_S = 2;
const REQUEST_TIMEOUT_S = 4;
/** How late a timeout may fire: Node checks its connections every second. */
const SLACK_MS = 2_500;
/** The slowest answer a well-behaved caller may get while the hostile clients run (a 2-core machine shared with other work). */
const SERVED_WITHIN_MS = 2_000;

let h: Harness;
let port: number;
let auth: { authorization: string };

before(async () => {
  h = await startHarness("local", {
    HTTP_HEADERS_TIMEOUT_SECONDS: String(HEADERS_TIMEOUT_S),
    HTTP_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S),
  });
  await h.app.listen({ host: "127.0.0.1", port: 0 });
  port = (h.app.server.address() as net.AddressInfo).port;
  auth = (await h.newCaller()).auth;
});
after(() => h?.stop());

interface RawAnswer {
  /** What the server wrote before it closed the connection. */
  text: string;
  status: number | undefined;
  body: unknown;
  /** Milliseconds from the connect to the answer (or the close). */
  closedAfterMs: number;
}

/**
 * Opens a socket, lets `drive` write to it (a write the server refuses, once it has answered and
 * closed, is expected), and resolves with the answer once the server closed the connection or
 * sent a whole response.
 */
function rawRequest(drive: (socket: net.Socket) => void | Promise<void>, giveUpMs = 30_000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const answer = (): RawAnswer => {
      const text = Buffer.concat(chunks).toString("latin1");
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
      const bodyText = text.split("\r\n\r\n")[1] ?? "";
      let body: unknown;
      try {
        body = JSON.parse(bodyText);
      } catch {
        body = bodyText;
      }
      return { text, status: status ? Number(status) : undefined, body, closedAfterMs: Date.now() - started };
    };
    const finish = () => {
      clearTimeout(timer);
      resolve(answer());
      socket.destroy();
    };
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      const text = Buffer.concat(chunks).toString("latin1");
      const headEnd = text.indexOf("\r\n\r\n");
      const length = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, headEnd))?.[1];
      if (headEnd >= 0 && length !== undefined && Buffer.byteLength(text.slice(headEnd + 4), "latin1") >= Number(length))
        finish();
    });
    socket.on("error", () => undefined);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${giveUpMs} ms: ${answer().text.slice(0, 200)}`));
    }, giveUpMs);
    socket.once("close", finish);
    socket.once("connect", () => void drive(socket));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A well-behaved caller asking GET /healthz and a job list every 100 ms until stopped. */
function normalTraffic() {
  const answers: Array<{ url: string; status: number; ms: number }> = [];
  const failures: string[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const url of ["/healthz", "/api/kits/v1/vocal-separations"]) {
        const asked = Date.now();
        try {
          const res = await fetch(`http://127.0.0.1:${port}${url}`, { headers: auth, signal: AbortSignal.timeout(10_000) });
          await res.arrayBuffer();
          answers.push({ url, status: res.status, ms: Date.now() - asked });
        } catch (error) {
          failures.push(`${url}: ${(error as Error).message}`);
        }
      }
      await sleep(100);
    }
  })();
  return {
    async stop() {
      // The quick refusals are over in a moment: the caller keeps going a little while after them too.
      const deadline = Date.now() + 10_000;
      while (answers.length + failures.length < 10 && Date.now() < deadline) await sleep(50);
      running = false;
      await loop;
      assert.deepEqual(failures, [], "every normal request was answered");
      assert.ok(answers.length >= 10, `normal traffic ran (${answers.length} answers)`);
      for (const a of answers) assert.equal(a.status, 200, a.url);
      const slowest = Math.max(...answers.map((a) => a.ms));
      console.log(`normal traffic: ${answers.length} answers, slowest ${slowest} ms`);
      assert.ok(slowest < SERVED_WITHIN_MS, `the slowest normal answer took ${slowest} ms`);
    },
  };
}

function multipartHead(path: string, boundary: string, contentLength: number): string {
  return (
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth.authorization}\r\n` +
    `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${contentLength}\r\n\r\n`
  );
}

const uploadLeftovers = async () => (await readdir(h.config.TMP_DIR)).filter((e) => e.startsWith("upload-"));

describe("slow and hostile clients are cut off while other callers are served", () => {
  test(`300 connections that send nothing are each answered 408 and closed after HTTP_HEADERS_TIMEOUT_SECONDS (${HEADERS_TIMEOUT_S} s)`, async () => {
    const traffic = normalTraffic();
    const idle = await Promise.all(Array.from({ length: 300 }, () => rawRequest(() => undefined)));
    await traffic.stop();
    for (const answer of idle) {
      assert.equal(answer.status, 408, answer.text);
      assert.deepEqual(answer.body, { statusCode: 408, error: "Request Timeout", message: "Client Timeout" });
      assert.ok(answer.closedAfterMs >= HEADERS_TIMEOUT_S * 1000 - 100, `closed after ${answer.closedAfterMs} ms`);
      assert.ok(answer.closedAfterMs < HEADERS_TIMEOUT_S * 1000 + SLACK_MS, `closed after ${answer.closedAfterMs} ms`);
    }
  });

  test("a request head sent a byte at a time (slowloris) is answered 408 after the headers timeout", async () => {
    const traffic = normalTraffic();
    const head = `GET /api/kits/v1/vocal-separations HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth.authorization}\r\n`;
    const answer = await rawRequest(async (socket) => {
      for (const byte of head) {
        if (socket.destroyed) return;
        socket.write(byte);
        await sleep(200);
      }
    });
    await traffic.stop();
    assert.equal(answer.status, 408, answer.text);
    assert.ok(answer.closedAfterMs < HEADERS_TIMEOUT_S * 1000 + SLACK_MS, `closed after ${answer.closedAfterMs} ms`);
  });

  test(`an upload trickling in at 10 bytes a second is answered 408 after HTTP_REQUEST_TIMEOUT_SECONDS (${REQUEST_TIMEOUT_S} s), its partial file removed`, async () => {
    const traffic = normalTraffic();
    const boundary = "trickle";
    const answer = await rawRequest(async (socket) => {
      socket.write(multipartHead("/api/kits/v1/vocal-separations", boundary, 1_000_000));
      socket.write(
        `--${boundary}\r\nContent-Disposition: form-data; name="inputFile"; filename="song.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFF`,
      );
      while (!socket.destroyed) {
        socket.write("0123456789");
        await sleep(1_000);
      }
    });
    await traffic.stop();
    assert.equal(answer.status, 408, answer.text);
    assert.deepEqual(answer.body, { statusCode: 408, error: "Request Timeout", message: "Client Timeout" });
    assert.ok(answer.closedAfterMs >= REQUEST_TIMEOUT_S * 1000 - 100, `closed after ${answer.closedAfterMs} ms`);
    assert.ok(answer.closedAfterMs < REQUEST_TIMEOUT_S * 1000 + SLACK_MS, `closed after ${answer.closedAfterMs} ms`);
    const deadline = Date.now() + 5_000;
    while ((await uploadLeftovers()).length > 0 && Date.now() < deadline) await sleep(100);
    assert.deepEqual(await uploadLeftovers(), [], "the partial upload is removed");
    assert.equal(await h.prisma.separationJob.count(), 0, "no job was made");
  });

  test("a multipart form of 5000 parts is answered 413 once past the form's limits (32 text fields, 48 parts)", async () => {
    const traffic = normalTraffic();
    const boundary = "manyparts";
    const parts = Array.from(
      { length: 5000 },
      (_, i) => `--${boundary}\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\n${i}\r\n`,
    ).join("");
    const body = `${parts}--${boundary}--\r\n`;
    const answer = await rawRequest((socket) => {
      socket.write(multipartHead("/api/kits/v1/vocal-separations", boundary, Buffer.byteLength(body)));
      // Not ended: a client that half-closes is answered nothing by Node (its request is aborted).
      socket.write(body);
    });
    await traffic.stop();
    assert.equal(answer.status, 413, answer.text);
    assert.equal((answer.body as { statusCode: number }).statusCode, 413);
    assert.match((answer.body as { message: string }).message, /^reach fields limit$/);
    assert.equal(await h.prisma.separationJob.count(), 0, "no job was made");
  });

  test("a multipart text field of 1 MB is answered 413 naming the field and its limit", async () => {
    const traffic = normalTraffic();
    const boundary = "hugefield";
    const body =
      `--${boundary}\r\nContent-Disposition: form-data; name="webhookUrl"\r\n\r\n${"x".repeat(1024 * 1024)}\r\n` +
      `--${boundary}--\r\n`;
    const answer = await rawRequest((socket) => {
      socket.write(multipartHead("/api/kits/v1/vocal-separations", boundary, Buffer.byteLength(body)));
      socket.write(body);
    });
    await traffic.stop();
    assert.equal(answer.status, 413, answer.text);
    assert.deepEqual(answer.body, { statusCode: 413, error: "Payload Too Large", message: "webhookUrl is longer than 256 KB" });
    assert.deepEqual(await uploadLeftovers(), []);
  });

  test("a request with a 1 MB header is answered 431 with a JSON body", async () => {
    const traffic = normalTraffic();
    const answer = await rawRequest((socket) => {
      socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"a".repeat(1024 * 1024)}\r\n\r\n`);
    });
    await traffic.stop();
    assert.equal(answer.status, 431, answer.text);
    assert.deepEqual(answer.body, {
      statusCode: 431,
      error: "Request Header Fields Too Large",
      message: "Exceeded maximum allowed HTTP header size",
    });
  });

  test("all of them at once, with 200 silent connections, still leave GET /healthz and the job list served", async () => {
    const traffic = normalTraffic();
    const boundary = "together";
    const hostile = [
      ...Array.from({ length: 200 }, () => rawRequest(() => undefined)),
      rawRequest(async (socket) => {
        socket.write(multipartHead("/api/kits/v1/vocal-separations", boundary, 1_000_000));
        while (!socket.destroyed) {
          socket.write("x");
          await sleep(500);
        }
      }),
      rawRequest((socket) => {
        socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"a".repeat(1024 * 1024)}\r\n\r\n`);
      }),
    ];
    const answers = await Promise.all(hostile);
    await traffic.stop();
    assert.deepEqual(
      [...new Set(answers.map((a) => a.status))].sort(),
      [408, 431],
      "every hostile connection got its answer and was closed",
    );
  });
});
