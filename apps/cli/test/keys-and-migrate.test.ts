import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ApiKeyRepository, createPrismaClient, type PrismaClient } from "@mixdown/db";
import { startTestStack, type TestStack } from "@mixdown/devstack";
import { lastLine, runCli } from "./run-cli.ts";

let stack: TestStack;
let prisma: PrismaClient;
let keys: ApiKeyRepository;
let env: Record<string, string>;
let home: string;

before(async () => {
  stack = await startTestStack({ storage: "local" });
  prisma = createPrismaClient(stack.env.DATABASE_URL!);
  keys = new ApiKeyRepository(prisma);
  // An empty MIXDOWN_HOME: nothing of a developer's own `mixdown up` can leak into these tests.
  home = await mkdtemp(path.join(os.tmpdir(), "mixdown-cli-test-"));
  env = { DATABASE_URL: stack.env.DATABASE_URL!, MIXDOWN_HOME: home };
});
after(async () => {
  await prisma?.$disconnect();
  await stack?.stop();
  await rm(home, { recursive: true, force: true });
});

describe("mixdown keys", () => {
  test("create prints the key once, alone on its last line, and it authenticates", async () => {
    const result = await runCli(["keys", "create", "--name", "ci"], env);
    assert.equal(result.code, 0, result.stderr);
    const key = lastLine(result.stdout);
    assert.match(key, /^mxd_[A-Za-z0-9_-]{43}$/);
    assert.equal(result.stdout.split(key).length, 2, "the key appears exactly once");
    const found = await keys.findCallerByKey(key);
    assert.equal(found?.caller.name, "ci");
  });

  test("create --caller adds a key to an existing caller", async () => {
    const first = await keys.createApiKey({ name: "team" });
    const result = await runCli(["keys", "create", "--name", "team laptop", "--caller", String(first.callerId)], env);
    assert.equal(result.code, 0, result.stderr);
    const found = await keys.findCallerByKey(lastLine(result.stdout));
    assert.equal(found?.caller.id, first.callerId);
  });

  test("create without --name is a usage error (exit 2) and creates nothing", async () => {
    const before = (await keys.listApiKeys()).length;
    const result = await runCli(["keys", "create"], env);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--name/);
    assert.equal((await keys.listApiKeys()).length, before);
  });

  test("list shows ids, prefixes and status but never a key", async () => {
    const created = await keys.createApiKey({ name: "listed" });
    const result = await runCli(["keys", "list"], env);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^ID\s+PREFIX\s+NAME\s+CALLER\s+CREATED\s+STATUS/m);
    const row = result.stdout.split("\n").find((l) => l.startsWith(`${created.id} `));
    assert.ok(row, "the new key is listed");
    assert.match(row, new RegExp(`${created.prefix}…\\s+listed\\s+${created.callerId} \\(listed\\).*active$`));
    assert.ok(!result.stdout.includes(created.key));
  });

  test("revoke by prefix or id stops the key working; an unknown one exits 1", async () => {
    const a = await keys.createApiKey({ name: "revoke-me" });
    const b = await keys.createApiKey({ name: "revoke-me-too" });
    const byPrefix = await runCli(["keys", "revoke", a.prefix], env);
    assert.equal(byPrefix.code, 0, byPrefix.stderr);
    assert.match(byPrefix.stdout, new RegExp(`Revoked key ${a.id}`));
    const byId = await runCli(["keys", "revoke", String(b.id)], env);
    assert.equal(byId.code, 0, byId.stderr);
    assert.equal(await keys.findCallerByKey(a.key), null);
    assert.equal(await keys.findCallerByKey(b.key), null);
    const unknown = await runCli(["keys", "revoke", "999999"], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /No key matches "999999"/);
  });
});

describe("mixdown migrate", () => {
  test("reports an up-to-date database (the stack is migrated already)", async () => {
    const result = await runCli(["migrate"], env);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Database is up to date \(\d+ migrations\)/);
  });

  test("without DATABASE_URL and without a local stack it says what to do (exit 2)", async () => {
    const result = await runCli(["migrate"], { DATABASE_URL: "", MIXDOWN_HOME: home });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /set DATABASE_URL, or run `\.\/mixdown\.sh up`/);
  });
});

describe("mixdown", () => {
  test("an unknown command prints the usage and exits 2", async () => {
    const result = await runCli(["frobnicate"], env);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /Unknown command "frobnicate"/);
    assert.match(result.stderr, /\.\/mixdown\.sh up/);
  });

  test("help lists every command", async () => {
    const result = await runCli(["help"], env);
    assert.equal(result.code, 0);
    for (const command of ["up", "migrate", "keys create", "keys revoke", "keys list", "separate"]) {
      assert.match(result.stdout, new RegExp(`\\./mixdown\\.sh ${command}`));
    }
  });
});
