#!/usr/bin/env node
// `pnpm test`: every package's tests, one package at a time, through turbo. turbo prefixes each
// line with the package name and ends with its own task summary, so the node test runner's counts
// end up scattered; this collects them and ends with one plain line: `N passed, N failed, …`.
// Each package's "failing tests" report (the runner's recap of what failed, with the error) is
// repeated just before that line, so a log's tail names what failed however long the run was.
// Extra arguments go to turbo (e.g. `pnpm test --filter @mixdown/db`).
// A test leaves nothing in the temporary directory: what the run added there (beside the tools'
// own caches) is listed at the end, grouped by name with the digits taken out, and fails the run.
// (onnxruntime's telemetry files, `.ses` and `mat-debug-<pid>.log`, are not made at all: every
// session is created through @mixdown/separation/ort, which turns that telemetry off.)
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const tmp = os.tmpdir();
/** The tools' own caches and sockets, kept between runs by design (not a test's leftovers). */
const CACHES = [/^tsx-/, /compile-cache/, /^pulse-/, /^\./, /^systemd-private-/, /^mixdown-devstack$/];
const entries = (dir) => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};
const tmpBefore = new Set(entries(tmp));
const devstackBefore = new Set(entries(path.join(tmp, "mixdown-devstack")));
/** What the run left in the temporary directory: new entries, and new folders in devstack's scratch root. */
function leftInTmp() {
  const added = entries(tmp).filter((name) => !tmpBefore.has(name) && !CACHES.some((re) => re.test(name)));
  const devstack = entries(path.join(tmp, "mixdown-devstack"))
    .filter((name) => !devstackBefore.has(name))
    .map((name) => `mixdown-devstack/${name}`);
  return [...added, ...devstack];
}

const root = fileURLToPath(new URL("..", import.meta.url));
const turbo = spawn(
  "pnpm",
  [
    "exec",
    "turbo",
    "run",
    "test",
    "--concurrency=1",
    "--continue",
    "--ui=stream",
    "--output-logs=full",
    ...process.argv.slice(2),
  ],
  {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, TURBO_TELEMETRY_DISABLED: "1", TURBO_NO_UPDATE_NOTIFIER: "1", DO_NOT_TRACK: "1" },
  },
);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => turbo.kill(signal));

const counters = ["tests", "pass", "fail", "cancelled", "skipped", "todo"];
/** package -> counts, summed over the runner's summary blocks of that package */
const byPackage = new Map();
const stripAnsi = (s) => s.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "");
/** package -> the lines of its runner's "✖ failing tests:" recap (capped; a recap can hold stacks) */
const failures = new Map();
const recapLines = 120;

createInterface({ input: turbo.stdout }).on("line", (line) => {
  process.stdout.write(`${line}\n`);
  const plain = stripAnsi(line);
  const recap = /^(\S+?):test: (.*)$/.exec(plain);
  if (recap) {
    const [, pkg, rest] = recap;
    if (rest.trim() === "✖ failing tests:") failures.set(pkg, []);
    else if (failures.has(pkg) && !/^(?:ℹ|#) /.test(rest) && failures.get(pkg).length < recapLines) failures.get(pkg).push(rest);
  }
  const match = /^(\S+?):test: (?:ℹ|#) (tests|pass|fail|cancelled|skipped|todo) (\d+)\s*$/.exec(plain);
  if (!match) return;
  const [, pkg, counter, value] = match;
  if (!byPackage.has(pkg)) byPackage.set(pkg, Object.fromEntries(counters.map((c) => [c, 0])));
  byPackage.get(pkg)[counter] += Number(value);
});

turbo.on("exit", (code, signal) => {
  const total = Object.fromEntries(counters.map((c) => [c, 0]));
  if (failures.size > 0) {
    console.log("\nFailing tests (each package's own recap, repeated here)");
    for (const [pkg, lines] of failures) {
      console.log(`── ${pkg}`);
      for (const l of lines) console.log(`  ${l}`);
      if (lines.length >= recapLines) console.log(`  … (first ${recapLines} lines; the full report is above)`);
    }
  }
  const width = Math.max(7, ...[...byPackage.keys()].map((p) => p.length));
  console.log(`\nTest summary (node --test, per package)\n${"package".padEnd(width)}  tests   pass   fail  skipped`);
  for (const [pkg, counts] of [...byPackage].sort(([a], [b]) => a.localeCompare(b))) {
    for (const c of counters) total[c] += counts[c];
    console.log(
      `${pkg.padEnd(width)}  ${String(counts.tests).padStart(5)}  ${String(counts.pass).padStart(5)}  ${String(counts.fail + counts.cancelled).padStart(5)}  ${String(counts.skipped + counts.todo).padStart(7)}`,
    );
  }
  const failed = total.fail + total.cancelled;
  const exitCode = code ?? (signal ? 1 : 0);
  const left = leftInTmp();
  if (left.length > 0) {
    const groups = new Map();
    for (const name of left) {
      const shape = name.replace(/[0-9]+/g, "N").replace(/-[A-Za-z0-9]{6}$/, "-XXXXXX");
      groups.set(shape, (groups.get(shape) ?? 0) + 1);
    }
    const shown = [...groups].map(([shape, n]) => `${shape} x${n}`).join(", ");
    console.log(`\nLeft in ${tmp} by the run (${left.length}): ${shown}`);
  }
  console.log(
    `${total.pass} passed, ${failed} failed, ${total.skipped + total.todo} skipped (${total.tests} tests in ${byPackage.size} packages)` +
      (exitCode !== 0 && failed === 0
        ? ` — but turbo exited with ${signal ?? code}: a package's test run broke before reporting`
        : ""),
  );
  process.exit((failed > 0 || left.length > 0) && exitCode === 0 ? 1 : exitCode);
});
