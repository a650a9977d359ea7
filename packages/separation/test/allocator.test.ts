import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { test } from "node:test";
import { GLIBC_ARENAS, JEMALLOC_CONF, jemallocPath, modelProcessEnv, SEMI_SPACE_FLAG } from "../src/allocator.ts";

const run = promisify(execFile);
const child = fileURLToPath(new URL("./support/allocator-child.ts", import.meta.url));

test("modelProcessEnv preloads jemalloc unless MODEL_ALLOCATOR=system, keeping the caller's own settings", () => {
  const path = jemallocPath();
  // ./mixdown.sh installs libjemalloc2 (APT_PACKAGES), so the test machine has it.
  assert.ok(path, "libjemalloc.so.2 is installed");
  const young = { NODE_OPTIONS: SEMI_SPACE_FLAG };
  // the default, and `jemalloc`
  for (const env of [{ PATH: "/bin" }, { MODEL_ALLOCATOR: "jemalloc" }, { MODEL_ALLOCATOR: "" }])
    assert.deepEqual(modelProcessEnv(env), { ...env, ...young, LD_PRELOAD: path, MALLOC_CONF: JEMALLOC_CONF });
  assert.deepEqual(
    modelProcessEnv({ LD_PRELOAD: "/x/libfoo.so", MALLOC_CONF: "narenas:2", NODE_OPTIONS: "--enable-source-maps" }),
    {
      LD_PRELOAD: `${path} /x/libfoo.so`,
      MALLOC_CONF: "narenas:2",
      NODE_OPTIONS: `--enable-source-maps ${SEMI_SPACE_FLAG}`,
    },
  );
  const preloaded = { LD_PRELOAD: "/opt/libjemalloc.so.2", NODE_OPTIONS: "--max-semi-space-size=8" };
  assert.deepEqual(modelProcessEnv(preloaded), preloaded);
  // `system`: glibc with two malloc arenas, unless the caller chose a number
  assert.deepEqual(modelProcessEnv({ MODEL_ALLOCATOR: "system" }), {
    MODEL_ALLOCATOR: "system",
    ...young,
    MALLOC_ARENA_MAX: GLIBC_ARENAS,
  });
  const own = { MODEL_ALLOCATOR: "system", MALLOC_ARENA_MAX: "4", NODE_OPTIONS: "--max-semi-space-size=16" };
  assert.deepEqual(modelProcessEnv(own), own);
  assert.throws(() => modelProcessEnv({ MODEL_ALLOCATOR: "tcmalloc" }), /MODEL_ALLOCATOR must be jemalloc or system/);
});

test("a process started with modelProcessEnv runs on jemalloc with the arena off, and a model's output is the same bytes", async () => {
  const start = async (env: NodeJS.ProcessEnv) => {
    const { stdout } = await run(process.execPath, ["--import", "tsx", child], {
      env,
      cwd: fileURLToPath(new URL("..", import.meta.url)),
    });
    return JSON.parse(stdout.trim().split("\n").at(-1)!) as { jemalloc: boolean; arena: boolean; hashes: string[] };
  };
  const plain = { ...process.env, LD_PRELOAD: "", MALLOC_CONF: "" };
  const [onJemalloc, onGlibc] = await Promise.all([
    start(modelProcessEnv({ ...plain, MODEL_ALLOCATOR: "jemalloc" })),
    start({ ...plain, MODEL_ALLOCATOR: "system" }),
  ]);
  assert.deepEqual([onJemalloc.jemalloc, onJemalloc.arena], [true, false]);
  assert.deepEqual([onGlibc.jemalloc, onGlibc.arena], [false, true]);
  // each run's output the same, run after run (memory reused between runs) and allocator against allocator
  assert.equal(new Set([...onJemalloc.hashes, ...onGlibc.hashes]).size, 1);
});
