import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  ApiKeyRepository,
  applyMigrations,
  createPrismaClient,
  DashboardSignInRepository,
  type PrismaClient,
} from "../src/index.ts";
import { startTestCluster, type TestCluster } from "./postgres.ts";

let cluster: TestCluster;
let prisma: PrismaClient;
let keys: ApiKeyRepository;
let codes: DashboardSignInRepository;

before(async () => {
  cluster = await startTestCluster();
  const url = await cluster.freshDatabase();
  await applyMigrations(url);
  prisma = createPrismaClient(url);
  keys = new ApiKeyRepository(prisma);
  codes = new DashboardSignInRepository(prisma);
});
after(async () => {
  await prisma?.$disconnect();
  await cluster.stop();
});

describe("DashboardSignInRepository", () => {
  test("redeems a code for its key once, and stores neither the code nor the key in clear", async () => {
    const created = await keys.createApiKey({ name: "dash" });
    const { code, expiresAt } = await codes.issue({ apiKeyId: created.id, apiKey: created.key });
    assert.ok(expiresAt.getTime() > Date.now() + 14 * 60_000 && expiresAt.getTime() <= Date.now() + 15 * 60_000);
    const row = await prisma.dashboardSignInCode.findFirstOrThrow({ where: { apiKeyId: created.id } });
    const stored = JSON.stringify(row);
    assert.ok(!stored.includes(code) && !stored.includes(created.key) && !stored.includes(created.key.slice(4)));
    assert.equal(await codes.redeem(code), created.key);
    assert.equal(await codes.redeem(code), null);
    assert.equal(await prisma.dashboardSignInCode.count({ where: { apiKeyId: created.id } }), 0);
  });

  test("gives nothing for an unknown code, an expired one, or one whose key was revoked", async () => {
    const created = await keys.createApiKey({ name: "dash2" });
    assert.equal(await codes.redeem("not-a-code"), null);
    const expired = await codes.issue({ apiKeyId: created.id, apiKey: created.key, ttlMs: -1 });
    assert.equal(await codes.redeem(expired.code), null);
    const revoked = await codes.issue({ apiKeyId: created.id, apiKey: created.key });
    await keys.revokeApiKey(created.id);
    assert.equal(await codes.redeem(revoked.code), null);
  });

  test("of two concurrent redeems of one code, exactly one gets the key", async () => {
    const created = await keys.createApiKey({ name: "dash3" });
    const { code } = await codes.issue({ apiKeyId: created.id, apiKey: created.key });
    const results = await Promise.all([codes.redeem(code), codes.redeem(code)]);
    assert.deepEqual(
      results.filter((r) => r !== null),
      [created.key],
    );
  });
});
