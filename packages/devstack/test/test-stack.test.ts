import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import net from "node:net";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { loadConfig } from "@mixdown/config";
import pg from "pg";
import { startTestStack } from "../src/index.ts";

function isListening(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

describe("startTestStack", () => {
  for (const storage of ["s3", "local"] as const) {
    test(`gives a loadConfig-valid env with storage=${storage} and a migrated database`, async () => {
      const stack = await startTestStack({ storage });
      try {
        const config = loadConfig(stack.env);
        assert.equal(config.STORAGE_DRIVER, storage);
        assert.equal(config.DATABASE_URL, stack.postgres.url);
        assert.equal(config.REDIS_URL, stack.redis.url);
        assert.equal(config.S3_ENDPOINT, stack.s3.endpoint);
        const client = new pg.Client({ connectionString: config.DATABASE_URL });
        await client.connect();
        const { rows } = await client.query(`SELECT migration_name FROM "_prisma_migrations"`);
        await client.end();
        assert.ok(rows.length >= 1);
      } finally {
        await stack.stop();
      }
      for (const url of [stack.env.DATABASE_URL!, stack.env.REDIS_URL!, stack.env.S3_ENDPOINT!]) {
        assert.equal(await isListening(url), false, `${url} is closed after stop()`);
      }
    });
  }

  test("two stacks share nothing", async () => {
    const [a, b] = await Promise.all([startTestStack({ storage: "local" }), startTestStack({ storage: "local" })]);
    try {
      for (const key of [
        "DATABASE_URL",
        "REDIS_URL",
        "S3_ENDPOINT",
        "STORAGE_LOCAL_DIR",
        "QUEUE_PREFIX",
        "SIGNED_URL_SECRET",
        "TMP_DIR",
      ]) {
        assert.notEqual(a.env[key], b.env[key], key);
      }
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  test("services die with a test process that is killed outright", async () => {
    const script = fileURLToPath(new URL("./fixtures/start-stack-and-hang.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "inherit"] });
    const env = await new Promise<Record<string, string>>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (chunk) => {
        out += chunk;
        const line = out.split("\n").find((l) => l.startsWith("{"));
        if (line) resolve(JSON.parse(line));
      });
      child.once("exit", (code) => reject(new Error(`fixture exited early with ${code}`)));
    });
    assert.equal(await isListening(env.DATABASE_URL!), true);
    child.kill("SIGKILL");
    assert.ok(await eventually(async () => !(await isListening(env.DATABASE_URL!)), 15_000), "postgres stopped");
    assert.ok(await eventually(async () => !(await isListening(env.REDIS_URL!)), 15_000), "redis stopped");
  });
});
