import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { freePort } from "@mixdown/devstack";
import { runCli } from "./run-cli.ts";
import { isAlive, isListening, type RunningUp, startUp, waitUntil } from "./run-up.ts";

const ups: RunningUp[] = [];
after(async () => {
  // Whatever happened, no `up` outlives the tests.
  for (const up of ups) up.interrupt();
  await Promise.all(ups.map(async (up) => (await up.exited, await up.cleanUp())));
});

describe("mixdown up", () => {
  test(
    "serves /healthz, prints the key as the last line before the logs, and a Ctrl-C stops every process it started",
    { timeout: 240_000 },
    async () => {
      // At info the API and the worker log at start: none of it may land after the key.
      const up = await startUp({ LOG_LEVEL: "info" });
      ups.push(up);
      const { port, home } = up;
      const key = await up.key;

      const lines = up.stdout().split("\n");
      const keyLine = lines.indexOf(key);
      const childLine = /^(api|worker) *\| /;
      assert.deepEqual(
        lines.slice(0, keyLine).filter((l) => childLine.test(l)),
        [],
        "no child output before the key",
      );
      assert.match(up.stdout(), new RegExp(`Base URL:\\s+http://127\\.0\\.0\\.1:${port}/api/kits/v1`));
      assert.match(up.stdout(), new RegExp(`Logs:\\s+${home}/logs`));
      // The dashboard link carries a one-time code, not the key, and the code signs in as that key.
      const code = new RegExp(`Dashboard:\\s+http://127\\.0\\.0\\.1:${port}/#/sign-in/([A-Za-z0-9_-]+)$`, "m").exec(
        up.stdout(),
      )?.[1];
      assert.ok(code && !key.includes(code), "the dashboard link carries a code");
      const signIn = await fetch(`http://127.0.0.1:${port}/dashboard/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ code }),
      });
      assert.deepEqual(await signIn.json(), { apiKey: key });
      assert.match(up.stdout(), /curl -H "Authorization: Bearer mxd_/);
      // The key's webhook secret, as `keys webhook-secret` would print it, comes before the key.
      const secret = /^  webhook-secret: (whsec_[0-9a-f]{64})$/m.exec(lines.slice(0, keyLine).join("\n"))?.[1];
      const printed = await runCli(["keys", "webhook-secret", key.slice(0, 12)], { DATABASE_URL: "", MIXDOWN_HOME: home });
      assert.equal(printed.stdout.trim(), secret, printed.stderr);
      // The worker's start-up lines went to its log file instead.
      assert.match(readFileSync(path.join(home, "logs", "worker.log"), "utf8"), /worker started/);

      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      assert.equal(health.status, 200);
      const list = await fetch(`http://127.0.0.1:${port}/api/kits/v1/vocal-separations`, {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(list.status, 200, await list.clone().text());
      // A request's log line is streamed, prefixed, after the key.
      await waitUntil(
        "the API's request log line is streamed",
        () =>
          up
            .stdout()
            .split("\n")
            .slice(keyLine + 1)
            .some((l) => l.startsWith("api   | ")),
        10_000,
      );
      const afterKey = up
        .stdout()
        .split("\n")
        .slice(keyLine + 1)
        .filter(Boolean);
      assert.deepEqual(
        afterKey.filter((l) => !childLine.test(l)),
        [],
        "after the key only child log lines",
      );
      const anonymous = await fetch(`http://127.0.0.1:${port}/api/kits/v1/vocal-separations`);
      assert.equal(anonymous.status, 401);
      assert.ok(existsSync(path.join(home, "stack.json")));
      assert.ok(existsSync(path.join(home, "secret")));

      // Another command finds the running stack's database by itself.
      const listed = await runCli(["keys", "list"], { DATABASE_URL: "", MIXDOWN_HOME: home });
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /mixdown up .*\(local\)/);

      const pids = { api: up.pid("api"), worker: up.pid("worker"), redis: up.pid("redis"), postgres: up.postgresPid() };
      for (const [name, pid] of Object.entries(pids)) assert.ok(pid && isAlive(pid), `${name} runs (pid ${pid})`);
      up.interrupt();
      assert.equal(await up.exited, 0, `${up.stdout()}\n${up.stderr()}`);
      for (const [name, pid] of Object.entries(pids)) assert.equal(isAlive(pid!), false, `${name} (pid ${pid}) was left behind`);
      assert.doesNotMatch(up.stdout(), /restarting in/, "nothing is restarted during the stop");
      assert.equal(await isListening(port), false);
      assert.ok(!existsSync(path.join(home, "stack.json")));
      for (const name of ["api", "worker", "redis"]) assert.equal(up.pid(name), undefined, `${name}.pid removed`);

      // Stopped: the key and its caller are kept in the persistent cluster, which a command can still open.
      const later = await runCli(["keys", "list"], { DATABASE_URL: "", MIXDOWN_HOME: home });
      assert.equal(later.code, 0, later.stderr);
      assert.ok(later.stdout.includes(key.slice(0, 12)));
    },
  );

  test(
    "a worker that keeps dying makes up say so with its last log lines, stop everything and exit 1",
    { timeout: 180_000 },
    async () => {
      const up = await startUp({
        MIXDOWN_UP_TEST_WORKER_ENTRY: "apps/cli/test/fixtures/crashing-worker.ts",
        WORKER_HEALTH_PORT: String(await freePort()),
      });
      ups.push(up);
      await up.key;
      const pids = { api: up.pid("api"), redis: up.pid("redis"), postgres: up.postgresPid() };
      assert.equal(await up.exited, 1, `${up.stdout()}\n${up.stderr()}`);

      const restarts = up.stdout().match(/^worker exited \(code 3\) after [\d.]+ s; restarting in [\d.]+ s/gm) ?? [];
      assert.deepEqual(
        restarts.map((r) => /restarting in ([\d.]+) s/.exec(r)![1]),
        ["0.5", "1", "2", "4", "8"],
        up.stdout(),
      );
      assert.match(
        up.stderr(),
        new RegExp(
          `worker keeps failing: 6 exits within 60 s \\(last: code 3\\)\\. Its last lines \\(${up.home}/logs/worker\\.log\\):\\n.*cannot open models/vocals\\.onnx`,
        ),
      );
      assert.match(up.stdout(), /Stopped\./);
      for (const [name, pid] of Object.entries(pids)) assert.equal(isAlive(pid!), false, `${name} (pid ${pid}) was left behind`);
      assert.equal(await isListening(up.port), false);
    },
  );
});
