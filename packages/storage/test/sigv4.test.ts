// Mixdown's S3 signatures checked by an independent SigV4 implementation (botocore, Debian's
// python3-botocore: support/verify_sigv4.py), as MinIO or AWS check them. s3rver, the S3 server of the
// other tests and of the compose check, checks neither a request's signature nor a presigned URL's,
// so those prove reachability only. Here S3_PUBLIC_ENDPOINT differs from S3_ENDPOINT in host and
// port, as in docker-compose.yml (http://localhost:9000 against http://minio:9000): the classic
// SignatureDoesNotMatch of self-hosted MinIO is a URL signed for one host and sent to the other.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { createStorage, type ObjectStorage } from "../src/index.ts";

const verifierPath = fileURLToPath(new URL("./support/verify_sigv4.py", import.meta.url));
const credentials = ["mixdown-access", "mixdown-secret/with+odd=chars"] as const;
const region = "eu-central-1";

interface Verdict {
  valid: boolean;
  problem?: string | null;
  expected?: string;
  got?: string;
}

/** botocore's verifier, one long-lived process; each question is one JSON line. */
function startVerifier() {
  // Debian's python3, whose python3-botocore ./mixdown.sh test installs (not a python of one's own).
  const python = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const child = spawn(python, [verifierPath], { stdio: ["pipe", "pipe", "inherit"] });
  const answers = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const ask = async (request: object, secret: string = credentials[1]): Promise<Verdict> => {
    child.stdin.write(`${JSON.stringify({ ...request, credentials: [credentials[0], secret], region })}\n`);
    const { value, done } = await answers.next();
    assert.ok(!done, "the verifier ended (is python3-botocore installed? ./mixdown.sh test installs it)");
    return JSON.parse(value as string) as Verdict;
  };
  return { ask, stop: () => child.stdin.end() };
}

/** Stands where S3_ENDPOINT points: keeps every request as it arrived, answers as S3 does to a PUT. */
async function captureServer() {
  const seen: { method: string; url: string; headers: Record<string, string>; body: Buffer }[] = [];
  const server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers: Record<string, string> = {};
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers[req.rawHeaders[i]!.toLowerCase()] = req.rawHeaders[i + 1]!;
    seen.push({ method: req.method!, url: `http://${req.headers.host}${req.url}`, headers, body: Buffer.concat(chunks) });
    res.writeHead(200, { ETag: '"0123456789abcdef0123456789abcdef"' }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, seen, close: () => server.close() };
}

function s3Storage(endpoint: string, publicEndpoint: string): ObjectStorage {
  return createStorage({
    STORAGE_DRIVER: "s3",
    STORAGE_LOCAL_DIR: "",
    SIGNED_URL_SECRET: "",
    S3_ENDPOINT: endpoint,
    S3_PUBLIC_ENDPOINT: publicEndpoint,
    S3_REGION: region,
    S3_BUCKET: "mixdown",
    S3_ACCESS_KEY_ID: credentials[0],
    S3_SECRET_ACCESS_KEY: credentials[1],
    S3_FORCE_PATH_STYLE: true,
    PUBLIC_BASE_URL: "",
    PORT: 8080,
  });
}

// Keys as Mixdown writes them (outputs, uploads under their client's name, voice model media), and
// the characters that SigV4's URI encoding gets wrong most often.
const keys = [
  "outputs/vocal-separations/12/vocals.wav",
  "uploads/7/My Song (final mix) ü&=+,;@$!'.mp3",
  "voice-models/3/image.png",
  "outputs/tts/1/output~v2 .mp3",
];

describe("S3 signatures, verified by botocore", () => {
  const verifier = startVerifier();
  let capture: Awaited<ReturnType<typeof captureServer>>;
  let storage: ObjectStorage;
  const publicEndpoint = "http://localhost:19000";
  before(async () => {
    capture = await captureServer();
    storage = s3Storage(`http://127.0.0.1:${capture.port}`, publicEndpoint);
  });
  after(async () => {
    verifier.stop();
    capture.close();
    await storage.close();
  });

  test("every presigned download URL verifies at S3_PUBLIC_ENDPOINT's host, and at no other", async () => {
    for (const key of keys) {
      const url = await storage.signedUrl(key, 3600);
      assert.equal(new URL(url).origin, publicEndpoint, url);
      const verdict = await verifier.ask({ kind: "query", method: "GET", url });
      assert.ok(verdict.valid, `${key}: ${verdict.problem} (${url})`);
      // The same URL sent to the internal endpoint, or with another secret, is refused.
      const internal = url.replace(publicEndpoint, `http://127.0.0.1:${capture.port}`);
      assert.equal((await verifier.ask({ kind: "query", method: "GET", url: internal })).problem, "SignatureDoesNotMatch");
      assert.equal(
        (await verifier.ask({ kind: "query", method: "GET", url }, "another-secret")).problem,
        "SignatureDoesNotMatch",
      );
    }
  });

  test("a URL signed for S3_ENDPOINT and rewritten to the public host (the classic mistake) is refused", async () => {
    const internalOnly = s3Storage(`http://127.0.0.1:${capture.port}`, "");
    try {
      const url = (await internalOnly.signedUrl(keys[1]!, 3600)).replace(`http://127.0.0.1:${capture.port}`, publicEndpoint);
      const verdict = await verifier.ask({ kind: "query", method: "GET", url });
      assert.equal(verdict.valid, false);
      assert.equal(verdict.problem, "SignatureDoesNotMatch");
    } finally {
      await internalOnly.close();
    }
  });

  test("the SDK's own requests to S3_ENDPOINT (an upload) verify, body hash included", async () => {
    capture.seen.length = 0;
    const body = Buffer.from("RIFF....WAVEfmt a small upload's bytes");
    await storage.putStream(keys[1]!, Readable.from([body]), { contentType: "audio/mpeg" });
    const put = capture.seen.find((r) => r.method === "PUT");
    assert.ok(put, `no PUT reached S3_ENDPOINT: ${capture.seen.map((r) => r.method).join(", ")}`);
    assert.deepEqual(put.body, body);
    const request = { kind: "header", method: "PUT", url: put.url, headers: put.headers, body: put.body.toString("base64") };
    const verdict = await verifier.ask(request);
    assert.ok(verdict.valid, `${verdict.problem}: ${JSON.stringify(put.headers)}`);
    // One byte of the body changed, and the signature no longer holds.
    const tampered = await verifier.ask({ ...request, body: Buffer.from(`${body}!`).toString("base64") });
    assert.equal(tampered.valid, false);
  });
});
