import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { freePort } from "@mixdown/devstack";
import { isAlive, isListening, type RunningUp, startUp, waitUntil } from "./run-up.ts";

// `mixdown up` killed before it could stop its children (SIGKILL; SIGTERM then SIGKILL 2 s later,
// as a container runtime or a process manager does): its children must not live on, and what a
// killed `up` did leave running is stopped by the next `up` of the same state dir.

/**
 * The API and the worker stop within 5 s of their stdin closing; the watchdogs poll every second
 * and SIGKILL 10 s after their stop signal. Measured: 2-15 s on a 2-core machine at load 20 (the
 * worker, still loading its models, last); the bound leaves room for such a machine.
 */
const GONE_WITHIN_MS = 20_000;

const ups: RunningUp[] = [];
const started: number[] = [];
after(async () => {
  for (const pid of started) if (isAlive(pid)) process.kill(pid, "SIGKILL");
  for (const up of ups) up.interrupt();
  await Promise.all(ups.map(async (up) => (await up.exited, await up.cleanUp())));
});

/** The pids of every process `up` started: API, worker, redis-server and the PostgreSQL postmaster. */
function childPids(up: RunningUp): Record<string, number> {
  const pids = { api: up.pid("api"), worker: up.pid("worker"), redis: up.pid("redis"), postgres: up.postgresPid() };
  for (const [name, pid] of Object.entries(pids)) assert.ok(pid && isAlive(pid), `${name} runs (pid ${pid})`);
  started.push(...(Object.values(pids) as number[]));
  return pids as Record<string, number>;
}

/** The watchdog shells (`superviseChild`) that poll `upPid`: `sh -c <script> <upPid> <childPid> ...`. */
function watchdogsOf(upPid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (argv[0] === "sh" && argv[1] === "-c" && argv[3] === String(upPid)) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

async function allGone(pids: Record<string, number>, since: number): Promise<void> {
  const goneAfter = new Map<string, string>();
  const alive = () => Object.entries(pids).filter(([, pid]) => isAlive(pid));
  for (;;) {
    for (const [name, pid] of Object.entries(pids)) {
      if (!goneAfter.has(name) && !isAlive(pid)) goneAfter.set(name, `${((Date.now() - since) / 1000).toFixed(1)} s`);
    }
    if (alive().length === 0 || Date.now() - since > GONE_WITHIN_MS) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  console.log(`after up was killed, gone: ${[...goneAfter].map(([name, after]) => `${name} ${after}`).join(", ")}`);
  const left = alive().map(([name, pid]) => `${name} (pid ${pid})`);
  assert.deepEqual(left, [], `${GONE_WITHIN_MS / 1000} s after up was killed these still run`);
}

/** An `up` (with `env`) that has served its first key, and the pids of its children. */
async function startedUp(env: Record<string, string> = {}) {
  const up = await startUp({ WORKER_HEALTH_PORT: String(await freePort()), ...env });
  ups.push(up);
  await up.key;
  return { up, pids: childPids(up) };
}

describe("children of a killed mixdown up", () => {
  test(
    `a SIGKILLed up takes its API, worker, redis-server and PostgreSQL with it within ${GONE_WITHIN_MS / 1000} s`,
    { timeout: 240_000 },
    async () => {
      const { up, pids } = await startedUp();
      const watchdogs = watchdogsOf(up.child.pid!);
      assert.equal(watchdogs.length, 4, "one watchdog per child");

      // Only `up` itself: its children are in process groups of their own, as a terminal or a runtime leaves them.
      const killedAt = Date.now();
      process.kill(up.child.pid!, "SIGKILL");
      await up.exited;
      await allGone(pids, killedAt);
      assert.equal(await isListening(up.port), false, "the API port is free");
      await waitUntil("the watchdogs are gone", () => watchdogs.every((pid) => !isAlive(pid)), 5_000);
    },
  );

  test(
    `an up sent SIGTERM and SIGKILL 2 s later leaves nothing running ${GONE_WITHIN_MS / 1000} s later`,
    { timeout: 240_000 },
    async () => {
      const { up, pids } = await startedUp();

      process.kill(up.child.pid!, "SIGTERM");
      await new Promise((r) => setTimeout(r, 2_000));
      const killedAt = Date.now();
      if (up.child.exitCode === null) process.kill(up.child.pid!, "SIGKILL");
      await up.exited;
      await allGone(pids, killedAt);
      assert.equal(await isListening(up.port), false, "the API port is free");
    },
  );

  test(
    "the next up of the same state dir stops the redis-server, PostgreSQL and worker a killed up left running, and starts",
    { timeout: 360_000 },
    async () => {
      const { up: first, pids } = await startedUp({
        // A worker that does not watch its parent (as before STOP_WHEN_STDIN_CLOSES): it lives on.
        MIXDOWN_UP_TEST_WORKER_ENTRY: "apps/cli/test/fixtures/parent-blind-worker.ts",
      });
      // Without its watchdogs (as an `up` before them, or a watchdog killed with it), a killed up leaves its servers running.
      for (const pid of watchdogsOf(first.child.pid!)) process.kill(pid, "SIGKILL");
      process.kill(first.child.pid!, "SIGKILL");
      await first.exited;
      await waitUntil("the API has stopped (its stdin closed)", () => !isAlive(pids.api!), GONE_WITHIN_MS);
      await new Promise((r) => setTimeout(r, 1_000));
      for (const name of ["worker", "redis", "postgres"]) assert.ok(isAlive(pids[name]!), `${name} was left running`);

      const second = await startUp({ WORKER_HEALTH_PORT: String(await freePort()) }, 180_000, first.home);
      ups.push(second);
      await second.key;
      for (const [name, pid] of Object.entries(pids)) assert.equal(isAlive(pid), false, `${name} (pid ${pid}) was stopped`);
      for (const [name, pid] of [
        ["worker", pids.worker],
        ["redis", pids.redis],
        ["PostgreSQL", pids.postgres],
      ] as const) {
        assert.match(
          second.stdout(),
          new RegExp(`^Stopped ${name} \\(pid ${pid}\\), left running by a previous mixdown up that did not stop it\\.$`, "m"),
        );
      }
      // What it started in their place serves.
      const health = await fetch(`${second.baseUrl}/readyz`);
      assert.equal(health.status, 200, await health.text());
      const newPids = childPids(second);
      assert.notEqual(newPids.postgres, pids.postgres);

      // Another up while this one runs refuses, and stops nothing.
      const third = await startUp({}, 60_000, first.home);
      assert.equal(await third.exited, 2, third.stdout() + third.stderr());
      assert.match(third.stderr(), /already (starting or )?up here/);
      for (const [name, pid] of Object.entries(newPids)) assert.ok(isAlive(pid), `${name} still runs`);

      second.interrupt();
      assert.equal(await second.exited, 0, second.stdout() + second.stderr());
      for (const [name, pid] of Object.entries(newPids))
        assert.equal(isAlive(pid), false, `${name} (pid ${pid}) was left behind`);
      assert.equal(existsSync(path.join(first.home, "run", "up.pid")), false, "up.pid removed");
    },
  );
});
