import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { test } from "node:test";
import { GLIBC_ARENAS, JEMALLOC_CONF, jemallocPath, modelProcessEnv } from "../src/allocator.ts";

const run = promisify(execFile);
const child = fileURLToPath(new URL("./support/allocator-child.ts", import.meta.url));

test("modelProcessEnv preloads jemalloc when MODEL_ALLOCATOR=jemalloc, keeping the caller's own settings", () => {
  const path = jemallocPath();
  // ./mixdown.sh installs libjemalloc2 (APT_PACKAGES), so the test machine has it.
  assert.ok(path, "libjemalloc.so.2 is installed");
  const jemalloc = { MODEL_ALLOCATOR: "jemalloc" };
  assert.deepEqual(modelProcessEnv({ ...jemalloc, PATH: "/bin" }), {
    ...jemalloc,
    PATH: "/bin",
    LD_PRELOAD: path,
    MALLOC_CONF: JEMALLOC_CONF,
  });
  assert.deepEqual(modelProcessEnv({ ...jemalloc, LD_PRELOAD: "/x/libfoo.so", MALLOC_CONF: "narenas:2" }), {
    ...jemalloc,
    LD_PRELOAD: `${path} /x/libfoo.so`,
    MALLOC_CONF: "narenas:2",
  });
  const preloaded = { ...jemalloc, LD_PRELOAD: "/opt/libjemalloc.so.2" };
  assert.equal(modelProcessEnv(preloaded), preloaded);
  // the default, and `system`: glibc with two malloc arenas, unless the caller chose a number
  for (const env of [{ PATH: "/bin" }, { MODEL_ALLOCATOR: "system" }, { MODEL_ALLOCATOR: "" }])
    assert.deepEqual(modelProcessEnv(env), { ...env, MALLOC_ARENA_MAX: GLIBC_ARENAS });
  const own = { MODEL_ALLOCATOR: "system", MALLOC_ARENA_MAX: "4" };
  assert.equal(modelProcessEnv(own), own);
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
