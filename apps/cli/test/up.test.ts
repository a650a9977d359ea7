import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { freePort } from "@mixdown/devstack";
import { repoRoot, runCli } from "./run-cli.ts";

const apiMissing = !existsSync(path.join(repoRoot, "apps/api/src/main.ts"));

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

const homes: string[] = [];
after(async () => {
  await Promise.all(homes.map((h) => rm(h, { recursive: true, force: true })));
});

describe("mixdown up", { skip: apiMissing && "apps/api/src/main.ts is not in this checkout yet" }, () => {
  test("serves /healthz, prints the base URL and a working key last, and stops cleanly on SIGTERM", { timeout: 240_000 }, async () => {
    const home = await mkdtemp(path.join(os.tmpdir(), "mixdown-up-test-"));
    homes.push(home);
    // mkdtemp makes it private; PostgreSQL runs as the postgres user when the tests run as root.
    await chmod(home, 0o755);
    const port = await freePort();
    const child = spawn(process.execPath, ["--import", "tsx", "apps/cli/src/main.ts", "up"], {
      cwd: repoRoot,
      env: { ...process.env, DATABASE_URL: "", MIXDOWN_HOME: home, PORT: String(port), LOG_LEVEL: "warn", WORKER_HEALTH_PORT: String(await freePort()) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (c) => (stderr += c));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.stdout.on("data", (c) => (stdout += c));
    // Whatever happens below, no `up` outlives the test.
    const stopUp = () => child.kill("SIGTERM");
    const ready = new Promise<string>((resolve, reject) => {
      child.stdout.on("data", () => {
        const match = /A fresh API key[^\n]*\n(mxd_\S+)\n/.exec(stdout);
        if (match) resolve(match[1]!);
      });
      void exited.then((code) => reject(new Error(`up exited with ${code}\n${stdout}\n${stderr}`)));
      setTimeout(() => reject(new Error(`up was not ready after 180 s\n${stdout}\n${stderr}`)), 180_000).unref();
    });
    let key: string;
    try {
      key = await ready;
    } catch (error) {
      stopUp();
      await exited;
      throw error;
    }

    try {
      assert.match(stdout, new RegExp(`Base URL:\\s+http://127\\.0\\.0\\.1:${port}/api/kits/v1`));
      assert.match(stdout, /curl -H "Authorization: Bearer mxd_/);
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      assert.equal(health.status, 200);
      const list = await fetch(`http://127.0.0.1:${port}/api/kits/v1/vocal-separations`, {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(list.status, 200, await list.clone().text());
      const anonymous = await fetch(`http://127.0.0.1:${port}/api/kits/v1/vocal-separations`);
      assert.equal(anonymous.status, 401);
      assert.ok(existsSync(path.join(home, "stack.json")));
      assert.ok(existsSync(path.join(home, "secret")));

      // Another command finds the running stack's database by itself.
      const listed = await runCli(["keys", "list"], { DATABASE_URL: "", MIXDOWN_HOME: home });
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /mixdown up .*\(local\)/);
    } finally {
      stopUp();
    }
    assert.equal(await exited, 0, `${stdout}\n${stderr}`);
    assert.equal(await isListening(port), false);
    assert.ok(!existsSync(path.join(home, "stack.json")));

    // Stopped: the key and its caller are kept in the persistent cluster, which a command can still open.
    const after = await runCli(["keys", "list"], { DATABASE_URL: "", MIXDOWN_HOME: home });
    assert.equal(after.code, 0, after.stderr);
    assert.ok(after.stdout.includes(key.slice(0, 12)));
  });
});
