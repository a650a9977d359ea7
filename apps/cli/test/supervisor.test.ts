import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { after, describe, test } from "node:test";
import { freePort, launchRedisServer } from "@mixdown/devstack";
import { type ChildSpec, Supervisor, type SupervisorOptions } from "../src/supervisor.ts";

const run = promisify(execFile);
const dirs: string[] = [];
after(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function supervisor(
  options: Partial<SupervisorOptions> = {},
): Promise<{ supervisor: Supervisor; reports: string[]; dir: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "mixdown-supervisor-test-"));
  dirs.push(dir);
  const reports: string[] = [];
  const s = new Supervisor({
    logsDir: path.join(dir, "logs"),
    runDir: path.join(dir, "run"),
    policy: { initialDelayMs: 50, maxDelayMs: 400, resetAfterMs: 60_000, maxRestarts: 5, windowMs: 60_000 },
    report: (line) => reports.push(line),
    ...options,
  });
  return { supervisor: s, reports, dir };
}

/** A real node process running `script`, output piped. */
function nodeChild(name: string, script: string): ChildSpec {
  return {
    name,
    launch: () => spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "pipe"] }),
    stopSignal: "SIGTERM",
    stopTimeoutMs: 5_000,
  };
}

const longRunning =
  "console.log('up ' + process.pid); process.on('SIGTERM', () => { console.log('stopping ' + process.pid); process.exit(0); }); setInterval(() => {}, 1000);";

async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const readPid = (file: string) => (existsSync(file) ? Number(readFileSync(file, "utf8").split("\n")[0]) : undefined);
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("Supervisor", () => {
  test("restarts a SIGKILLed child with doubling backoff, one report line per restart, pid file and log kept", async () => {
    const { supervisor: s, reports, dir } = await supervisor();
    const first = await s.start(nodeChild("app", longRunning));
    s.restartOnExit();
    const pidFile = path.join(dir, "run", "app.pid");
    assert.equal(readPid(pidFile), first.pid);
    const logged = (pid: number | undefined) => readFileSync(s.logFile("app"), "utf8").includes(`up ${pid}\n`);

    await waitUntil("the first process logged", () => logged(first.pid));
    first.kill("SIGKILL");
    await waitUntil("a second process runs", () => readPid(pidFile) !== undefined && readPid(pidFile) !== first.pid);
    const second = s.current("app")!;
    assert.equal(readPid(pidFile), second.pid);
    await waitUntil("the second process logged", () => logged(second.pid));
    second.kill("SIGKILL");
    await waitUntil("a third process runs", () => ![undefined, first.pid, second.pid].includes(readPid(pidFile)));

    assert.equal(reports.length, 2, reports.join("\n"));
    assert.match(reports[0]!, /^app exited \(signal SIGKILL\) after [\d.]+ s; restarting in 0\.05 s \(restart 1 within 60 s\)$/);
    assert.match(reports[1]!, /restarting in 0\.1 s \(restart 2 within 60 s\)$/);

    await waitUntil("the third process logged", () => logged(readPid(pidFile)));
    await s.stop();
    const log = readFileSync(s.logFile("app"), "utf8");
    for (const pid of [first.pid, second.pid]) assert.ok(log.includes(`up ${pid}`), log);
    assert.equal(log.match(/mixdown up: app exited \(signal SIGKILL\)/g)?.length, 2, log);
    assert.equal(existsSync(pidFile), false);
    assert.equal(reports.length, 2, "stopping is not a crash");
  });

  test("gives up on a crash-looping child with the reason and its last lines, after maxRestarts restarts", async () => {
    const { supervisor: s, reports } = await supervisor({
      policy: { initialDelayMs: 10, maxDelayMs: 40, resetAfterMs: 60_000, maxRestarts: 3, windowMs: 60_000 },
    });
    await s.start(nodeChild("worker", "console.error('cannot load models/vocals.onnx'); process.exit(3)"));
    s.restartOnExit();
    const failure = await s.failed;
    assert.equal(failure.name, "worker");
    assert.equal(failure.reason, "worker keeps failing: 4 exits within 60 s (last: code 3)");
    assert.ok(failure.lastLines.includes("cannot load models/vocals.onnx"), failure.lastLines.join("\n"));
    assert.equal(failure.logFile, s.logFile("worker"));
    assert.deepEqual(
      reports.map((r) => /restarting in ([\d.]+) s/.exec(r)?.[1]),
      ["0.01", "0.02", "0.04"],
    );
    await s.stop();
  });

  test("an exit during start-up fails at once, without a restart", async () => {
    const { supervisor: s, reports } = await supervisor();
    await s.start(nodeChild("api", "console.error('EADDRINUSE'); process.exit(1)"));
    const failure = await s.failed;
    assert.equal(failure.reason, "api exited during start-up (code 1)");
    assert.deepEqual(failure.lastLines, ["EADDRINUSE"]);
    assert.deepEqual(reports, []);
    await s.stop();
  });

  test("a launch that rejects counts as a crash and is tried again", async () => {
    const { supervisor: s, reports } = await supervisor();
    let launches = 0;
    const running: ChildProcess[] = [];
    const flaky = nodeChild("flaky", longRunning);
    await s.start({
      ...flaky,
      launch: (attach) => {
        launches++;
        // The second launch fails the way a server that never gets ready does.
        if (launches === 2) throw new Error("redis-server (port 1) was not ready after 60000 ms.\n--- output ---\nsome output");
        const child = flaky.launch(attach) as ChildProcess;
        running.push(child);
        return child;
      },
    });
    s.restartOnExit();
    running[0]!.kill("SIGKILL");
    await waitUntil("a third launch runs", () => launches === 3 && s.current("flaky") !== undefined);
    assert.equal(reports.length, 2, reports.join("\n"));
    assert.match(reports[1]!, /^flaky exited \(could not start: redis-server \(port 1\) was not ready after 60000 ms\.\) after/);
    await s.stop();
  });

  test("stop ends every child, the last started first, and cancels a pending restart", async () => {
    const {
      supervisor: s,
      reports,
      dir,
    } = await supervisor({
      policy: { initialDelayMs: 2_000, maxDelayMs: 2_000, resetAfterMs: 60_000, maxRestarts: 5, windowMs: 60_000 },
    });
    const a = await s.start(nodeChild("a", longRunning));
    const b = await s.start(nodeChild("b", longRunning));
    const c = await s.start(nodeChild("c", longRunning));
    s.restartOnExit();
    await waitUntil("a logged", () => readFileSync(s.logFile("a"), "utf8").includes("up "));
    const exits: string[] = [];
    for (const [name, child] of [
      ["a", a],
      ["b", b],
      ["c", c],
    ] as const)
      child.once("exit", () => exits.push(name));
    c.kill("SIGKILL");
    await waitUntil("c's restart is scheduled", () => reports.length === 1);
    await s.stop();
    assert.deepEqual(exits, ["c", "b", "a"]);
    for (const child of [a, b]) assert.equal(isAlive(child.pid!), false);
    assert.equal(s.current("c"), undefined, "no restart after stop");
    await new Promise((r) => setTimeout(r, 2_200));
    assert.equal(s.current("c"), undefined, "the pending restart was cancelled");
    for (const name of ["a", "b", "c"]) assert.equal(existsSync(path.join(dir, "run", `${name}.pid`)), false);
    assert.match(readFileSync(s.logFile("a"), "utf8"), /stopping \d+/);
  });

  test("a log past logMaxBytes becomes <name>.log.1 and a new one starts, so a chatty child holds at most twice the limit", async () => {
    const { supervisor: s } = await supervisor({ logMaxBytes: 4_096 });
    // 400 lines of 100 bytes: ten times the limit.
    const chatty = "for (let i = 0; i < 400; i++) console.log(String(i).padStart(99, '.')); setInterval(() => {}, 1000);";
    await s.start(nodeChild("chatty", chatty));
    s.restartOnExit();
    await waitUntil("every line logged", () =>
      [s.logFile("chatty"), `${s.logFile("chatty")}.1`].some(
        (f) => existsSync(f) && readFileSync(f, "utf8").includes(`${"399".padStart(99, ".")}\n`),
      ),
    );
    const current = readFileSync(s.logFile("chatty"), "utf8");
    const previous = readFileSync(`${s.logFile("chatty")}.1`, "utf8");
    for (const text of [current, previous]) assert.ok(Buffer.byteLength(text) <= 4_096, `${Buffer.byteLength(text)} bytes`);
    // Lines are never split across the two files, and the newest are in the current one.
    assert.match(current, new RegExp(`^${"399".padStart(99, ".").replaceAll(".", "\\.")}$`, "m"));
    for (const line of (previous + current).split("\n").filter((l) => !l.startsWith("---") && l)) assert.equal(line.length, 99);
    await s.stop();
  });

  test("restarts a SIGKILLed redis-server on the same port with its append-only data", async () => {
    const { supervisor: s, reports, dir } = await supervisor();
    const port = await freePort();
    const data = path.join(dir, "redis");
    await mkdir(data);
    const first = await s.start({
      name: "redis",
      launch: (attach) => launchRedisServer({ port, dir: data, appendOnly: true, onSpawn: attach }),
      stopSignal: "SIGTERM",
      stopTimeoutMs: 5_000,
    });
    s.restartOnExit();
    const cli = (...args: string[]) => run("redis-cli", ["-p", String(port), ...args]).then((r) => r.stdout.trim());
    assert.equal(await cli("SET", "queued", "job-1"), "OK");
    first.kill("SIGKILL");
    await waitUntil("redis answers again", async () => (await cli("PING").catch(() => "")) === "PONG");
    assert.equal(await cli("GET", "queued"), "job-1");
    assert.equal(reports.length, 1);
    assert.match(readFileSync(s.logFile("redis"), "utf8"), /Ready to accept connections/);
    await s.stop();
  });
});
