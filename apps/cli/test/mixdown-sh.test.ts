import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFile, mkdtemp, rm, stat } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { jemallocPath } from "@mixdown/separation";
import { repoRoot } from "./run-cli.ts";

const run = promisify(execFile);

/** This process' PATH without the project's toolchain and workspace bins: the machine's own tools. */
function machinePath(): string {
  return (process.env.PATH ?? "")
    .split(":")
    .filter((dir) => dir && !dir.includes(".mixdown/toolchain") && !dir.includes("node_modules"))
    .join(":");
}

/** A port on loopback that refuses connections: a registry npm cannot reach. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function runScript(script: string, args: string[], env: Record<string, string>) {
  return run("bash", [script, ...args], { env, timeout: 120_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );
}

describe("mixdown.sh", () => {
  let checkout: string;
  before(async () => {
    // A checkout of just the script and the manifest it reads pnpm's version from.
    checkout = await mkdtemp(path.join(os.tmpdir(), "mixdown-sh-"));
    await copyFile(path.join(repoRoot, "mixdown.sh"), path.join(checkout, "mixdown.sh"));
    await copyFile(path.join(repoRoot, "package.json"), path.join(checkout, "package.json"));
  });
  after(() => rm(checkout, { recursive: true, force: true }));

  test("stops at a failed toolchain install once, saying what failed and how to fix it, and leaves the machine's node alone", async () => {
    const machineNode = (await run("node", ["--version"], { env: { PATH: machinePath() } })).stdout;
    const result = await runScript(path.join(checkout, "mixdown.sh"), ["setup"], {
      PATH: machinePath(),
      HOME: process.env.HOME ?? os.homedir(),
      npm_config_registry: `http://127.0.0.1:${await closedPort()}/`,
      npm_config_fetch_retries: "0",
      npm_config_fetch_timeout: "5000",
    });
    assert.equal(result.code, 1, result.stdout + result.stderr);
    assert.match(result.stderr, /mixdown\.sh: npm pack node-linux-(x64|arm64)@24\.\d+\.\d+ failed/);
    assert.match(result.stderr, /Check that npm reaches its registry \(npm ping\), then rerun\./);
    // One attempt: a registry that refuses is not retried, and the failure is not blamed on pnpm.
    assert.equal(result.stdout.match(/==> Node 24\.\d+\.\d+ into \.mixdown\/toolchain\/node/g)?.length, 1, result.stdout);
    assert.doesNotMatch(result.stdout + result.stderr, /pnpm install|command not found/);
    await assert.rejects(stat(path.join(checkout, ".mixdown/toolchain/bin/node")), { code: "ENOENT" });
    assert.equal((await run("node", ["--version"], { env: { PATH: machinePath() } })).stdout, machineNode);
  });

  test("help lists the CLI's commands in the ./mixdown.sh form", async () => {
    const result = await runScript(path.join(repoRoot, "mixdown.sh"), ["help"], {
      PATH: machinePath(),
      HOME: process.env.HOME ?? os.homedir(),
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /\.\/mixdown\.sh up /);
    assert.match(result.stdout, /\.\/mixdown\.sh keys create --name NAME/);
    assert.match(result.stdout, /\.\/mixdown\.sh separate /);
    assert.doesNotMatch(result.stdout, /^pnpm mixdown /m);
  });

  test("a workspace script reads the flags after a `--` as flags, as pnpm and npm are called", async () => {
    const result = await runScript(path.join(repoRoot, "mixdown.sh"), ["bench:separation", "--", "--no-such-flag"], {
      PATH: machinePath(),
      HOME: process.env.HOME ?? os.homedir(),
    });
    // The script got the flag itself (and refused it by name), not a positional argument after `--`.
    assert.equal(result.code, 1, result.stdout + result.stderr);
    assert.match(result.stderr, /Unknown option '--no-such-flag'/);
    assert.doesNotMatch(result.stderr, /Unexpected argument/);
  });

  test("separate runs on jemalloc unless MODEL_ALLOCATOR says otherwise, and says which", async (t) => {
    if (!jemallocPath()) return t.skip("libjemalloc2 is not installed (./mixdown.sh setup installs it)");
    const dir = await mkdtemp(path.join(os.tmpdir(), "mixdown-sh-separate-"));
    try {
      const input = path.join(dir, "in.wav");
      await run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "sine=f=330:r=44100:d=1", "-ac", "2", input]);
      const env = { PATH: machinePath(), HOME: process.env.HOME ?? os.homedir() };
      // Each run into a folder of its own: a second run into the same one would skip the file, separated already.
      const separate = (extra: Record<string, string>) =>
        runScript(
          path.join(repoRoot, "mixdown.sh"),
          ["separate", input, "--model", "vocals", "--out", path.join(dir, `out-${extra.MODEL_ALLOCATOR ?? "default"}`)],
          { ...env, ...extra },
        );
      const byDefault = await separate({});
      assert.equal(byDefault.code, 0, byDefault.stdout + byDefault.stderr);
      assert.match(byDefault.stdout, /; allocator jemalloc$/m);
      const system = await separate({ MODEL_ALLOCATOR: "system" });
      assert.equal(system.code, 0, system.stdout + system.stderr);
      assert.match(system.stdout, /; allocator system$/m);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
