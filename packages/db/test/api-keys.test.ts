import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { ApiKeyRepository, applyMigrations, createPrismaClient, JobStatus, type PrismaClient } from "../src/index.ts";
import { startTestCluster, type TestCluster } from "./postgres.ts";

let cluster: TestCluster;
let prisma: PrismaClient;
let keys: ApiKeyRepository;

before(async () => {
  cluster = await startTestCluster();
  const url = await cluster.freshDatabase();
  await applyMigrations(url);
  prisma = createPrismaClient(url);
  keys = new ApiKeyRepository(prisma);
});
after(async () => {
  await prisma?.$disconnect();
  await cluster.stop();
});

describe("ApiKeyRepository", () => {
  test("creates a caller named after the key when no caller is given, and stores only the key's hash", async () => {
    const created = await keys.createApiKey({ name: "alice" });
    assert.match(created.key, /^mxd_[A-Za-z0-9_-]{43}$/);
    assert.equal(created.prefix, created.key.slice(0, 12));
    const caller = await prisma.caller.findUniqueOrThrow({ where: { id: created.callerId } });
    assert.equal(caller.name, "alice");
    const row = await prisma.apiKey.findUniqueOrThrow({ where: { id: created.id } });
    assert.equal(row.keyHash, createHash("sha256").update(created.key).digest("hex"));
    assert.equal(row.keyPrefix, created.prefix);
    assert.ok(!JSON.stringify(row).includes(created.key));
  });

  test("adds a key to an existing caller", async () => {
    const first = await keys.createApiKey({ name: "bob" });
    const second = await keys.createApiKey({ name: "bob laptop", callerId: first.callerId });
    assert.equal(second.callerId, first.callerId);
    assert.notEqual(second.key, first.key);
    const found = await keys.findCallerByKey(second.key);
    assert.equal(found?.caller.name, "bob");
  });

  test("finds the caller of a valid key and nothing for unknown, malformed or revoked keys", async () => {
    const created = await keys.createApiKey({ name: "carol" });
    const found = await keys.findCallerByKey(created.key);
    assert.deepEqual(
      { callerId: found?.caller.id, apiKeyId: found?.apiKeyId, keyPrefix: found?.keyPrefix },
      { callerId: created.callerId, apiKeyId: created.id, keyPrefix: created.prefix },
    );
    assert.equal(await keys.findCallerByKey(`${created.key}x`), null);
    assert.equal(await keys.findCallerByKey("not-a-key"), null);
    assert.equal(await keys.findCallerByKey(""), null);
    await keys.revokeApiKey(created.id);
    assert.equal(await keys.findCallerByKey(created.key), null);
  });

  test("revokes by numeric id or by displayed prefix, and reports unknown ones as null", async () => {
    const a = await keys.createApiKey({ name: "dave" });
    const b = await keys.createApiKey({ name: "erin" });
    const byId = await keys.revokeApiKey(String(a.id));
    assert.equal(byId?.id, a.id);
    assert.ok(byId?.revokedAt instanceof Date);
    const byPrefix = await keys.revokeApiKey(b.prefix);
    assert.equal(byPrefix?.id, b.id);
    assert.equal(await keys.findCallerByKey(b.key), null);
    assert.equal(await keys.revokeApiKey(999_999), null);
    assert.equal(await keys.revokeApiKey("mxd_nope"), null);
  });

  test("a key's own rate limits are stored, resolved with its caller and changed later; none means null (the deployment default)", async () => {
    const plain = await keys.createApiKey({ name: "ivan" });
    assert.deepEqual((await keys.findCallerByKey(plain.key))?.rateLimits, { readsPerMinute: null, writesPerMinute: null });

    const limited = await keys.createApiKey({ name: "judy", readsPerMinute: 600, writesPerMinute: 30 });
    assert.deepEqual((await keys.findCallerByKey(limited.key))?.rateLimits, { readsPerMinute: 600, writesPerMinute: 30 });
    const unlimited = await keys.createApiKey({ name: "ken", writesPerMinute: 0 });
    assert.deepEqual((await keys.findCallerByKey(unlimited.key))?.rateLimits, { readsPerMinute: null, writesPerMinute: 0 });

    const changed = await keys.setRateLimits(limited.prefix, { writesPerMinute: 5 });
    assert.deepEqual(changed?.rateLimits, { readsPerMinute: 600, writesPerMinute: 5 }, "a limit left out is kept");
    await keys.setRateLimits(limited.id, { readsPerMinute: null });
    assert.deepEqual((await keys.findCallerByKey(limited.key))?.rateLimits, { readsPerMinute: null, writesPerMinute: 5 });
    assert.equal(await keys.setRateLimits(999_999, { readsPerMinute: 1 }), null);
    const listed = (await keys.listApiKeys()).find((k) => k.id === limited.id);
    assert.deepEqual(listed?.rateLimits, { readsPerMinute: null, writesPerMinute: 5 });
  });

  test("refuses negative or fractional rate limits and creates nothing", async () => {
    const before = await prisma.apiKey.count();
    const callers = await prisma.caller.count();
    await assert.rejects(
      keys.createApiKey({ name: "mallory", writesPerMinute: -1 }),
      /writesPerMinute must be a whole number .* got -1/,
    );
    await assert.rejects(
      keys.createApiKey({ name: "mallory", readsPerMinute: 1.5 }),
      /readsPerMinute must be a whole number .* got 1.5/,
    );
    assert.equal(await prisma.apiKey.count(), before);
    assert.equal(await prisma.caller.count(), callers);
    const key = await keys.createApiKey({ name: "niaj" });
    await assert.rejects(keys.setRateLimits(key.id, { readsPerMinute: 2 ** 31 }), /readsPerMinute must be a whole number/);
    assert.deepEqual((await keys.findCallerByKey(key.key))?.rateLimits, { readsPerMinute: null, writesPerMinute: null });
  });

  test("refuses a prefix that matches more than one key", async () => {
    await keys.createApiKey({ name: "frank" });
    await assert.rejects(keys.revokeApiKey("mxd_"), /matches \d+ keys/);
  });

  test("lists every key with its caller, revoked ones included, oldest first", async () => {
    const created = await keys.createApiKey({ name: "grace" });
    await keys.revokeApiKey(created.id);
    const list = await keys.listApiKeys();
    assert.deepEqual(
      list.map((k) => k.id),
      [...list.map((k) => k.id)].sort((x, y) => x - y),
    );
    const entry = list.find((k) => k.id === created.id);
    assert.equal(entry?.callerName, "grace");
    assert.equal(entry?.prefix, created.prefix);
    assert.ok(entry?.revokedAt instanceof Date);
    assert.ok(!JSON.stringify(list).includes(created.key));
  });
});

describe("generated client", () => {
  test("exports the schema's enums and reads rows through the pg adapter", async () => {
    assert.equal(JobStatus.running, "running");
    const { callerId } = await keys.createApiKey({ name: "heidi" });
    const job = await prisma.separationJob.create({
      data: { callerId, kind: "stem_split", inputKey: "uploads/stem-split/x", inputFormat: "wav" },
    });
    assert.equal(job.status, JobStatus.running);
    assert.deepEqual(job.stems, []);
    assert.equal(job.enqueuedAt, null);
  });
});
