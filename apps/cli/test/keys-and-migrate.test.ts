import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ApiKeyRepository, createJobTables, createPrismaClient, SeparationJobRepository, type PrismaClient } from "@mixdown/db";
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

  test("create prints the key's webhook secret on the line before the key; keys webhook-secret prints it again", async () => {
    const result = await runCli(["keys", "create", "--name", "hooks"], env);
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stdout.trimEnd().split("\n");
    const key = lines.at(-1)!;
    const secretLine = lines.at(-2)!;
    assert.match(secretLine, /^webhook-secret: whsec_[0-9a-f]{64}$/);
    const secret = secretLine.slice("webhook-secret: ".length);
    const found = await keys.findCallerByKey(key);
    assert.ok(found);
    const row = await prisma.apiKey.findUniqueOrThrow({ where: { id: found.apiKeyId } });
    assert.equal(row.webhookSecret, secret, "the printed secret is the stored one");

    for (const name of [String(found.apiKeyId), found.keyPrefix]) {
      const again = await runCli(["keys", "webhook-secret", name], env);
      assert.equal(again.code, 0, again.stderr);
      assert.equal(lastLine(again.stdout), secret);
    }
    const other = await keys.createApiKey({ name: "other" });
    assert.notEqual(other.webhookSecret, secret, "each key has its own secret");
    const missing = await runCli(["keys", "webhook-secret", "999999"], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /No key matches/);
  });

  test("create --operator makes an operator key (list says so); a plain create does not", async () => {
    const result = await runCli(["keys", "create", "--name", "admin", "--operator"], env);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^Created operator key \d+ /m);
    const operator = await keys.findCallerByKey(lastLine(result.stdout));
    assert.equal(operator?.operator, true);
    const plain = await keys.findCallerByKey(lastLine((await runCli(["keys", "create", "--name", "plain"], env)).stdout));
    assert.equal(plain?.operator, false);
    const list = await runCli(["keys", "list"], env);
    const row = (id: number) => list.stdout.split("\n").find((l) => l.startsWith(`${id} `))!;
    assert.match(row(operator!.apiKeyId), /\s+operator$/);
    assert.match(row(plain!.apiKeyId), /\s+-$/);
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
    assert.match(
      result.stdout,
      /^ID\s+PREFIX\s+NAME\s+CALLER\s+CREATED\s+STATUS\s+READS\/MIN\s+WRITES\/MIN\s+QUOTA\/MONTH\s+ROLE$/m,
    );
    const row = result.stdout.split("\n").find((l) => l.startsWith(`${created.id} `));
    assert.ok(row, "the new key is listed");
    assert.match(
      row,
      new RegExp(`${created.prefix}…\\s+listed\\s+${created.callerId} \\(listed\\).*active\\s+default\\s+default\\s+none\\s+-$`),
    );
    assert.ok(!result.stdout.includes(created.key));
  });

  test("create --writes-per-minute 30 --reads-per-minute 600 stores the key's own limits; list shows them", async () => {
    const result = await runCli(
      ["keys", "create", "--name", "limited", "--writes-per-minute", "30", "--reads-per-minute", "600"],
      env,
    );
    assert.equal(result.code, 0, result.stderr);
    const found = await keys.findCallerByKey(lastLine(result.stdout));
    assert.deepEqual(found?.rateLimits, { readsPerMinute: 600, writesPerMinute: 30 });
    const unlimited = await runCli(["keys", "create", "--name", "batch", "--writes-per-minute", "0"], env);
    const batch = await keys.findCallerByKey(lastLine(unlimited.stdout));
    assert.deepEqual(batch?.rateLimits, { readsPerMinute: null, writesPerMinute: 0 });
    const list = await runCli(["keys", "list"], env);
    const row = (id: number) => list.stdout.split("\n").find((l) => l.startsWith(`${id} `));
    assert.match(row(found!.apiKeyId)!, /active\s+600\s+30\s+none\s+-$/);
    assert.match(row(batch!.apiKeyId)!, /active\s+default\s+unlimited\s+none\s+-$/);
  });

  test("create with a negative or non-numeric limit exits 2 naming the flag and creates nothing", async () => {
    const before = (await keys.listApiKeys()).length;
    for (const args of [["--writes-per-minute=-1"], ["--writes-per-minute", "fast"], ["--writes-per-minute", "1.5"]]) {
      const result = await runCli(["keys", "create", "--name", "bad", ...args], env);
      assert.equal(result.code, 2, result.stdout);
      assert.match(result.stderr, /--writes-per-minute takes a whole number of requests per minute \(0 = unlimited\)/);
    }
    const dashed = await runCli(["keys", "create", "--name", "bad", "--writes-per-minute", "-1"], env);
    assert.equal(dashed.code, 2, dashed.stdout);
    assert.match(dashed.stderr, /Option '--writes-per-minute' argument is ambiguous/);
    assert.equal((await keys.listApiKeys()).length, before);
  });

  test("limits changes a key's limits (default returns one to the deployment's); an unknown key exits 1", async () => {
    const created = await keys.createApiKey({ name: "tuned", readsPerMinute: 100 });
    const result = await runCli(
      ["keys", "limits", created.prefix, "--writes-per-minute", "10", "--reads-per-minute", "default"],
      env,
    );
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`Key ${created.id} .*reads per minute default, writes per minute 10`));
    assert.deepEqual((await keys.findCallerByKey(created.key))?.rateLimits, { readsPerMinute: null, writesPerMinute: 10 });
    const nothing = await runCli(["keys", "limits", String(created.id)], env);
    assert.equal(nothing.code, 2);
    assert.match(nothing.stderr, /needs --reads-per-minute and\/or --writes-per-minute/);
    const unknown = await runCli(["keys", "limits", "999999", "--reads-per-minute", "1"], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /No key matches "999999"/);
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

  test("create --quota-minutes stores a monthly quota; keys quota changes and removes it; a bad value exits 2", async () => {
    const result = await runCli(["keys", "create", "--name", "metered", "--quota-minutes", "90"], env);
    assert.equal(result.code, 0, result.stderr);
    const found = await keys.findCallerByKey(lastLine(result.stdout));
    const quotaOf = async () => (await prisma.apiKey.findUniqueOrThrow({ where: { id: found!.apiKeyId } })).monthlyQuotaMinutes;
    assert.equal(await quotaOf(), 90);
    const list = await runCli(["keys", "list"], env);
    assert.match(list.stdout.split("\n").find((l) => l.startsWith(`${found!.apiKeyId} `)) ?? "", /90 min\s+-$/);

    const changed = await runCli(["keys", "quota", found!.keyPrefix, "30"], env);
    assert.equal(changed.code, 0, changed.stderr);
    assert.match(changed.stdout, new RegExp(`Key ${found!.apiKeyId} .*monthly quota 30 minutes of audio`));
    assert.equal(await quotaOf(), 30);
    const removed = await runCli(["keys", "quota", String(found!.apiKeyId), "none"], env);
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal(await quotaOf(), null);

    for (const args of [
      ["keys", "create", "--name", "bad", "--quota-minutes", "-5"],
      ["keys", "quota", String(found!.apiKeyId), "1.5"],
      ["keys", "quota", String(found!.apiKeyId)],
    ]) {
      const bad = await runCli(args, env);
      assert.equal(bad.code, 2, args.join(" "));
      assert.match(bad.stderr, /quota/);
    }
    assert.equal(await prisma.apiKey.count({ where: { name: "bad" } }), 0);
    const unknown = await runCli(["keys", "quota", "999999", "10"], env);
    assert.equal(unknown.code, 1);
  });

  test("usage lists every key of every caller with its minutes per kind in the month asked", async () => {
    const first = await keys.createApiKey({ name: "usage-a", monthlyQuotaMinutes: 10 });
    const second = await keys.createApiKey({ name: "usage-b", callerId: first.callerId });
    const separations = new SeparationJobRepository(prisma);
    const tables = createJobTables(prisma);
    const succeed = async (apiKeyId: number, kind: "vocal_separation" | "stem_split", audioSeconds: number) => {
      const row = await separations.create({
        callerId: first.callerId,
        apiKeyId,
        kind,
        inputKey: "uploads/x.wav",
        inputFormat: "wav",
        audioSeconds,
      });
      assert.equal(
        await tables.separation.complete(row.id, {
          vocalKey: null,
          lossyVocalKey: null,
          backingKey: null,
          stems: [],
          lossyStems: [],
          models: ["vocals"],
        }),
        true,
      );
      return row.id;
    };
    await succeed(first.id, "vocal_separation", 90);
    await succeed(first.id, "stem_split", 30);
    const october = await succeed(second.id, "vocal_separation", 60);
    await prisma.usageRecord.updateMany({ where: { rowId: october }, data: { endedAt: new Date("2026-10-15T12:00:00Z") } });

    const now = await runCli(["keys", "usage"], env);
    assert.equal(now.code, 0, now.stderr);
    const lines = now.stdout.split("\n");
    const header = lines.find((l) => l.startsWith("ID "))!.split(/\s{2,}/);
    assert.deepEqual(header.slice(4), [
      "VOCAL_SEPARATION",
      "STEM_SPLIT",
      "VOICE_CONVERSION",
      "VOICE_BLEND",
      "TTS",
      "AUDIO_ANALYSIS",
      "VOCAL_REPAIR",
      "MASTERING",
      "HARMONY",
      "PIPELINE",
      "MINUTES",
      "JOBS",
      "QUOTA",
      "LEFT",
    ]);
    const row = (id: number, out: string[]) =>
      out
        .find((l) => l.startsWith(`${id} `))
        ?.split(/\s{2,}/)
        .slice(4);
    assert.deepEqual(row(first.id, lines), [
      "1.5 (1)",
      "0.5 (1)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "2.0",
      "2",
      "10 min",
      "8.0",
    ]);
    assert.deepEqual(row(second.id, lines), [
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0 (0)",
      "0.0",
      "0",
      "none",
      "-",
    ]);

    const past = await runCli(["keys", "usage", "--month", "2026-10"], env);
    assert.equal(past.code, 0, past.stderr);
    assert.match(past.stdout, /^Usage in 2026-10 /);
    assert.deepEqual(row(second.id, past.stdout.split("\n"))?.slice(0, 1), ["1.0 (1)"]);
    const bad = await runCli(["keys", "usage", "--month", "October"], env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--month takes a month as YYYY-MM/);
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
    for (const command of ["up", "migrate", "keys create", "keys revoke", "keys list", "separate", "batch"]) {
      assert.match(result.stdout, new RegExp(`\\./mixdown\\.sh ${command}`));
    }
  });
});
