import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { loadConfig } from "@mixdown/config";
import { JOB_CATALOGUE, JOB_KINDS, type JobKind } from "@mixdown/jobs";
import { selectQueues } from "../src/worker-app.ts";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

/** The kinds a GPU node takes, spelled from each entry's own flag. */
const GPU_KINDS = JOB_KINDS.filter((kind: JobKind) => JOB_CATALOGUE[kind].gpu);

/**
 * Every queue list a deployment file sets: compose's `WORKER_QUEUES: ${VAR:-default}` (its
 * default) and the env examples' `WORKER_QUEUES=` / `GPU_WORKER_QUEUES=` lines, with whether it is
 * a GPU worker's (read from `GPU_WORKER_QUEUES`).
 */
async function deploymentQueueLists(): Promise<Array<{ where: string; gpu: boolean; value: string }>> {
  const out: Array<{ where: string; gpu: boolean; value: string }> = [];
  for (const file of ["docker-compose.yml", "docker-compose.worker.yml", "docker/worker.env.example", ".env.example"]) {
    const text = await readFile(join(repoRoot, file), "utf8");
    for (const [line, index] of text.split("\n").map((l, i) => [l, i + 1] as const)) {
      const compose = /^\s*WORKER_QUEUES:\s*\$\{(\w+):-([^}]*)\}/.exec(line);
      const env = /^(GPU_)?WORKER_QUEUES=(.*)$/.exec(line);
      if (compose) out.push({ where: `${file}:${index}`, gpu: compose[1] === "GPU_WORKER_QUEUES", value: compose[2]! });
      else if (env) out.push({ where: `${file}:${index}`, gpu: env[1] !== undefined, value: env[2]! });
      else if (/WORKER_QUEUES/.test(line) && !line.trim().startsWith("#"))
        assert.fail(`${file}:${index} sets WORKER_QUEUES in a form this test does not read: ${line.trim()}`);
    }
  }
  return out;
}

test("every deployment file's worker serves every kind, and its GPU worker every kind that runs models", async () => {
  const lists = await deploymentQueueLists();
  assert.ok(lists.filter((l) => l.gpu).length >= 4 && lists.filter((l) => !l.gpu).length >= 2, JSON.stringify(lists));
  for (const { where, gpu, value } of lists)
    assert.deepEqual(selectQueues(value), gpu ? GPU_KINDS : JOB_KINDS, `${where}: WORKER_QUEUES=${value}`);
  // A worker whose deployment sets no WORKER_QUEUES (the compose stack's own) takes the default.
  const defaults = loadConfig({ DATABASE_URL: "postgres://mixdown@localhost/mixdown", SIGNED_URL_SECRET: "x".repeat(32) });
  assert.deepEqual(selectQueues(defaults.WORKER_QUEUES), JOB_KINDS);
});
