import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "@mixdown/config";
import { RunningJobRepository, SeparationJobRepository } from "@mixdown/db";
import { bullJobId, createQueues, Reconciler } from "@mixdown/queue";
import { SignedUrlCache, signFileKey } from "@mixdown/storage";
import { buildApp } from "../src/index.ts";
import { assertUnchanged, audio, footprint, multipart, sortedKeys, startHarness, type Harness } from "./helpers.ts";

let h: Harness;
before(async () => {
  h = await startHarness("local");
});
after(async () => {
  await h?.stop();
});

async function createSeparation(auth: Record<string, string>): Promise<number> {
  const form = multipart({}, [{ name: "inputFile", filename: "song.flac", content: await audio("wav") }]);
  const res = await h.app.inject({
    method: "POST",
    url: "/api/kits/v1/vocal-separations",
    headers: { ...form.headers, ...auth },
    payload: form.payload,
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().id;
}

describe("local-disk storage: signed download URLs served by /files", () => {
  let caller: Awaited<ReturnType<Harness["newCaller"]>>;
  let url: URL;
  let key: string;
  let bytes: Buffer;
  before(async () => {
    caller = await h.newCaller();
    const id = await createSeparation(caller.auth);
    const row = await new SeparationJobRepository(h.prisma).findById(id);
    key = row!.inputKey;
    bytes = await audio("wav");
    // What a worker does when it finishes: output keys on the row.
    await h.prisma.separationJob.update({
      where: { id },
      data: {
        status: "success",
        vocalKey: key,
        stems: [
          { instrument: "vocals", key },
          { instrument: "backing", key },
        ],
        jobEndTime: new Date(),
      },
    });
    const record = (
      await h.app.inject({ method: "GET", url: `/api/kits/v1/vocal-separations/${id}`, headers: caller.auth })
    ).json();
    assert.equal(record.status, "success");
    assert.deepEqual(
      record.stemFileUrls.map((s: { instrument: string }) => s.instrument),
      ["vocals", "backing"],
    );
    assert.deepEqual(sortedKeys(record.stemFileUrls[0]), ["instrument", "url"]);
    url = new URL(record.vocalAudioFileUrl);
  });

  test("the record's URL is ${PUBLIC_BASE_URL}/files/<key>?expires&signature and downloads without a key", async () => {
    assert.equal(url.origin, "http://127.0.0.1");
    assert.equal(url.pathname, `/files/${key}`);
    assert.match(url.searchParams.get("signature")!, /^[0-9a-f]{64}$/);
    const expires = Number(url.searchParams.get("expires"));
    // Signed at the start of a time slice (reused within it), valid at least the TTL from now.
    const now = Date.now() / 1000;
    const ttl = h.config.SIGNED_URL_TTL_SECONDS;
    assert.ok(expires >= Math.floor(now) + ttl && expires <= now + ttl + SignedUrlCache.sliceSeconds(ttl), `expires ${expires}`);
    const res = await h.app.inject({ method: "GET", url: url.pathname + url.search });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers["content-type"], "audio/wav");
    assert.equal(Number(res.headers["content-length"]), bytes.length);
    assert.ok(res.rawPayload.equals(bytes));
  });

  test("byte ranges are served with 206", async () => {
    const res = await h.app.inject({ method: "GET", url: url.pathname + url.search, headers: { range: "bytes=4-11" } });
    assert.equal(res.statusCode, 206);
    assert.equal(res.headers["content-range"], `bytes 4-11/${bytes.length}`);
    assert.ok(res.rawPayload.equals(bytes.subarray(4, 12)));
    const unsatisfiable = await h.app.inject({
      method: "GET",
      url: url.pathname + url.search,
      headers: { range: `bytes=${bytes.length}-` },
    });
    assert.equal(unsatisfiable.statusCode, 416);
  });

  test("a tampered signature, a tampered key or a missing signature → 403 JSON", async () => {
    const sig = url.searchParams.get("signature")!;
    const flipped = sig.slice(0, -1) + (sig.endsWith("0") ? "1" : "0");
    for (const target of [
      `${url.pathname}?expires=${url.searchParams.get("expires")}&signature=${flipped}`,
      `${url.pathname.replace(/\.wav$/, ".mp3")}${url.search}`,
      `${url.pathname}?expires=${Number(url.searchParams.get("expires")) + 1}&signature=${sig}`,
      url.pathname,
    ]) {
      const res = await h.app.inject({ method: "GET", url: target });
      assert.equal(res.statusCode, 403, target);
      assert.deepEqual(res.json(), { statusCode: 403, error: "Forbidden", message: "invalid signature for this file URL" });
    }
  });

  test("a path out of the storage folder is refused even when validly signed (../, encoded, backslash, absolute): 403 or 404, never a file", async () => {
    const expires = Math.floor(Date.now() / 1000) + 600;
    for (const evil of [
      "../../../../etc/passwd",
      "..%2f..%2f..%2fetc%2fpasswd",
      "%2e%2e/%2e%2e/etc/passwd",
      "uploads\\..\\..\\x",
      "/etc/passwd",
    ]) {
      const key = decodeURIComponent(evil);
      const res = await h.app.inject({
        url: `/files/${evil}?expires=${expires}&signature=${signFileKey(h.config.SIGNED_URL_SECRET!, key, expires)}`,
      });
      assert.ok([403, 404].includes(res.statusCode), `${evil}: ${res.statusCode}`);
      assert.doesNotMatch(res.body, /root:/, evil);
      assert.equal(typeof res.json().message, "string", evil);
    }
  });

  test("an expired URL → 403 saying so; a validly signed missing file → 404", async () => {
    const past = Math.floor(Date.now() / 1000) - 5;
    const expired = await h.app.inject({
      method: "GET",
      url: `/files/${key}?expires=${past}&signature=${signFileKey(h.config.SIGNED_URL_SECRET!, key, past)}`,
    });
    assert.equal(expired.statusCode, 403);
    assert.match(expired.json().message, /expired/);
    const future = past + 3600;
    const missingKey = "uploads/vocal-separation/none.wav";
    const missing = await h.app.inject({
      method: "GET",
      url: `/files/${missingKey}?expires=${future}&signature=${signFileKey(h.config.SIGNED_URL_SECRET!, missingKey, future)}`,
    });
    assert.equal(missing.statusCode, 404);
  });
});

test("a streamed 51 MB upload (no Content-Length) is cut off at the limit: 413, nothing stored", async () => {
  const caller = await h.newCaller();
  const wav = await audio("wav");
  const form = multipart({}, [
    { name: "inputFile", filename: "big.wav", content: Buffer.concat([wav, Buffer.alloc(51 * 1024 * 1024 - wav.length)]) },
  ]);
  const before = await footprint(h);
  const { "content-length": _, ...headers } = form.headers;
  const chunks = function* () {
    for (let i = 0; i < form.payload.length; i += 256 * 1024) yield form.payload.subarray(i, i + 256 * 1024);
  };
  const res = await h.app.inject({
    method: "POST",
    url: "/api/kits/v1/stem-splits",
    headers: { ...headers, ...caller.auth },
    payload: Readable.from(chunks()),
  });
  assert.equal(res.statusCode, 413, res.body);
  assert.match(res.json().message, /inputFile exceeds the maximum upload size of 50 MB/);
  await assertUnchanged(h, before);
});

test("rate limits: per key, separate read and write buckets, 429 with Retry-After", async () => {
  const config = loadConfig({
    ...h.stack.env,
    LOG_LEVEL: "silent",
    RATE_LIMIT_READS_PER_MINUTE: "3",
    RATE_LIMIT_WRITES_PER_MINUTE: "1",
  });
  const app = await buildApp(config, { authCacheTtlMs: 0 });
  try {
    const a = await h.newCaller();
    const b = await h.newCaller();
    const get = (auth: Record<string, string>) => app.inject({ method: "GET", url: "/api/kits/v1/stem-splits", headers: auth });
    for (let i = 0; i < 3; i++) {
      const ok = await get(a.auth);
      assert.equal(ok.statusCode, 200);
      assert.equal(ok.headers["x-ratelimit-limit"], "3");
      assert.equal(ok.headers["x-ratelimit-remaining"], String(2 - i));
    }
    const limited = await get(a.auth);
    assert.equal(limited.statusCode, 429);
    const retryAfter = Number(limited.headers["retry-after"]);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.deepEqual(sortedKeys(limited.json()), ["error", "message", "statusCode"]);
    assert.match(limited.json().message, /rate limit exceeded: 3 read requests per minute/);
    assert.equal((await get(b.auth)).statusCode, 200, "another key has its own budget");

    const blend = () =>
      app.inject({ method: "POST", url: "/api/kits/v1/voice-blender", headers: a.auth, payload: { modelId1: 1 } });
    assert.equal((await blend()).statusCode, 422, "writes have their own bucket, untouched by reads");
    const writeLimited = await blend();
    assert.equal(writeLimited.statusCode, 429);
    assert.match(writeLimited.json().message, /1 write requests per minute/);
  } finally {
    await app.close();
  }
});

test("with the default settings one key uploads 20 files and sends 45 bad ones in a minute: no 429, no X-RateLimit headers, the bad ones leave nothing", async () => {
  const caller = await h.newCaller();
  const wav = await audio("wav");
  const upload = async (content: Buffer) => {
    const form = multipart({}, [{ name: "inputFile", filename: "take.wav", content }]);
    return h.app.inject({
      method: "POST",
      url: "/api/kits/v1/vocal-separations",
      headers: { ...form.headers, ...caller.auth },
      payload: form.payload,
    });
  };
  const batch = await Promise.all(Array.from({ length: 20 }, () => upload(wav)));
  assert.deepEqual(
    batch.map((r) => r.statusCode),
    Array(20).fill(200),
  );
  assert.ok(
    batch.every((r) => r.headers["x-ratelimit-limit"] === undefined),
    "no limit applies, so no X-RateLimit headers",
  );

  const before = await footprint(h);
  for (let i = 0; i < 45; i++) {
    const rejected = await upload(Buffer.from("this is not audio ".repeat(40)));
    assert.equal(rejected.statusCode, 415, rejected.body);
  }
  await assertUnchanged(h, before);
  const list = await h.app.inject({ method: "GET", url: "/api/kits/v1/vocal-separations?perPage=100", headers: caller.auth });
  assert.equal(list.json().meta.total, 20);
});

test("a key's own limits win over the global setting, 0 = unlimited; keys without take the global one", async () => {
  const config = loadConfig({ ...h.stack.env, LOG_LEVEL: "silent", RATE_LIMIT_WRITES_PER_MINUTE: "2" });
  const app = await buildApp(config, { authCacheTtlMs: 0 });
  try {
    const write = (auth: Record<string, string>) =>
      app.inject({ method: "POST", url: "/api/kits/v1/voice-blender", headers: auth, payload: { modelId1: 1 } });
    const read = (auth: Record<string, string>) => app.inject({ method: "GET", url: "/api/kits/v1/voice-models", headers: auth });
    const statuses = async (send: () => Promise<{ statusCode: number }>, times: number) => {
      const codes = [];
      for (let i = 0; i < times; i++) codes.push((await send()).statusCode);
      return codes;
    };

    const global = await h.newCaller();
    assert.deepEqual(await statuses(() => write(global.auth), 3), [422, 422, 429], "the global write limit of 2");
    const globalRead = await read(global.auth);
    assert.equal(globalRead.statusCode, 200);
    assert.equal(globalRead.headers["x-ratelimit-limit"], undefined, "reads are unlimited globally: no headers");

    const own = await h.newCaller(undefined, { writesPerMinute: 4, readsPerMinute: 1 });
    const writes = [];
    for (let i = 0; i < 5; i++) writes.push(await write(own.auth));
    assert.deepEqual(
      writes.map((r) => r.statusCode),
      [422, 422, 422, 422, 429],
      "the key's own 4 wins over the global 2",
    );
    assert.equal(writes[0]!.headers["x-ratelimit-limit"], "4");
    assert.match(writes[4]!.json().message, /rate limit exceeded: 4 write requests per minute for this API key/);
    assert.deepEqual(
      await statuses(() => read(own.auth), 2),
      [200, 429],
      "the key's own read limit applies where the global one is off",
    );

    const unlimited = await h.newCaller(undefined, { writesPerMinute: 0 });
    const free = [];
    for (let i = 0; i < 6; i++) free.push(await write(unlimited.auth));
    assert.deepEqual(
      free.map((r) => r.statusCode),
      Array(6).fill(422),
      "0 on the key lifts the global limit",
    );
    assert.ok(free.every((r) => r.headers["x-ratelimit-limit"] === undefined));
  } finally {
    await app.close();
  }
});

test("a create whose queue add fails still answers 200; the reconciler queues the row later", async () => {
  const config = loadConfig({ ...h.stack.env, LOG_LEVEL: "silent" });
  const deadQueues = createQueues({ connection: "redis://127.0.0.1:1", prefix: config.QUEUE_PREFIX, attempts: 1 });
  const app = await buildApp(config, { queues: deadQueues, authCacheTtlMs: 0, enqueueTimeoutMs: 300 });
  try {
    const caller = await h.newCaller();
    const form = multipart({}, [{ name: "inputFile", filename: "a.wav", content: await audio("wav") }]);
    const res = await app.inject({
      method: "POST",
      url: "/api/kits/v1/vocal-separations",
      headers: { ...form.headers, ...caller.auth },
      payload: form.payload,
    });
    assert.equal(res.statusCode, 200, res.body);
    const id = res.json().id;
    const row = await new SeparationJobRepository(h.prisma).findById(id);
    assert.equal(row?.enqueuedAt, null);
    assert.equal(await h.app.ctx.queues.queue("separation").getJob(bullJobId("separation", id)), undefined);

    const reconciler = new Reconciler({ queues: h.app.ctx.queues, source: new RunningJobRepository(h.prisma), graceSeconds: 30 });
    const result = await reconciler.reconcileOnce(new Date(Date.now() + 60_000));
    assert.ok(result.requeued.some((r) => r.queue === "separation" && r.payload.jobId === id));
    assert.deepEqual((await h.app.ctx.queues.queue("separation").getJob(bullJobId("separation", id)))?.data, {
      kind: "vocal-separation",
      jobId: id,
    });
    assert.notEqual((await new SeparationJobRepository(h.prisma).findById(id))?.enqueuedAt, null);
  } finally {
    await app.close();
    await deadQueues.close().catch(() => {});
  }
});

test("readiness names what is down (503) while liveness stays up", async () => {
  await h.stack.redis.stop();
  const res = await h.app.inject({ method: "GET", url: "/readyz" });
  assert.equal(res.statusCode, 503);
  assert.equal(res.headers["retry-after"], "5");
  const body = res.json();
  assert.equal(body.statusCode, 503);
  assert.match(body.message, /^not ready: redis/);
  assert.equal(body.checks.postgres, "ok");
  assert.equal(body.checks.storage, "ok");
  assert.equal((await h.app.inject({ method: "GET", url: "/healthz" })).statusCode, 200);
});

test("the logs never hold a credential: not an API key (accepted or wrong), not a signed URL's signature", async () => {
  const lines: string[] = [];
  const config = loadConfig({ ...h.stack.env, LOG_LEVEL: "debug" });
  const app = await buildApp(config, { authCacheTtlMs: 0, logStream: { write: (line: string) => void lines.push(line) } });
  try {
    const caller = await h.newCaller();
    const id = await createSeparation(caller.auth);
    assert.equal((await app.inject({ url: `/api/kits/v1/vocal-separations/${id}`, headers: caller.auth })).statusCode, 200);
    const signed = new URL(
      await app.ctx.storage.signedUrl((await h.prisma.separationJob.findUniqueOrThrow({ where: { id } })).inputKey, 60),
    );
    assert.equal((await app.inject({ url: signed.pathname + signed.search })).statusCode, 200);
    assert.equal((await app.inject({ url: `${signed.pathname}?expires=1&signature=${"ab".repeat(32)}` })).statusCode, 403);
    assert.equal(
      (await app.inject({ url: "/api/kits/v1/voice-models", headers: { authorization: "Bearer wrong-key-0123456789" } }))
        .statusCode,
      401,
    );
    const bad = multipart({ webhookUrl: "not a url" }, [{ name: "inputFile", filename: "a.wav", content: await audio("wav") }]);
    const refused = await app.inject({
      method: "POST",
      url: "/api/kits/v1/vocal-separations",
      headers: { ...bad.headers, ...caller.auth },
      payload: bad.payload,
    });
    assert.equal(refused.statusCode, 422);

    const log = lines.join("");
    assert.match(log, /"url":"\/files\/[^"]*signature=\[redacted\]/, "the download was logged, its signature masked");
    assert.match(log, /"statusCode":401/, "the refused key's request was logged");
    for (const secret of [caller.key, "wrong-key-0123456789", signed.searchParams.get("signature")!, config.SIGNED_URL_SECRET!])
      assert.ok(!log.includes(secret), `the log holds ${secret.slice(0, 6)}...`);
  } finally {
    await app.close();
  }
});
