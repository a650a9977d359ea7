import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, stat, utimes } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { readModelCatalogue, voiceAssetPaths } from "../src/catalogue.ts";
import { downloadsDir, pullEntry, type PullContext } from "../src/pull.ts";
import { catalogue, files, mirror } from "../testing/model-mirror.ts";

const scratch = await mkdtemp(join(tmpdir(), "mixdown-pull-lock-"));
after(() => rm(scratch, { recursive: true, force: true }));
const served = await mirror(files);
const entry = (await readModelCatalogue(await catalogue(scratch))).models.find((m) => m.name === "Test_Vocal")!;

function context(modelsDir: string, lines: string[]): PullContext {
  return { modelsDir, assets: voiceAssetPaths(modelsDir, {}), mirror: served.base, log: (line) => lines.push(line) };
}
const fetches = () => served.seen.filter((s) => s.path === "/uvr/Test_Vocal.onnx").length;

test("two installs of one entry at once into one models directory: one downloads and installs, the other waits and finds it installed", async () => {
  const modelsDir = join(scratch, "together");
  const before = fetches();
  const [first, second] = [[] as string[], [] as string[]];
  const summaries = await Promise.all([
    pullEntry(entry, context(modelsDir, first)),
    pullEntry(entry, context(modelsDir, second)),
  ]);
  assert.equal(fetches() - before, 1, "one download");
  assert.equal(
    summaries.filter((s) => s === "Test_Vocal was installed meanwhile, by another process").length,
    1,
    summaries.join(" | "),
  );
  assert.ok([...first, ...second].some((line) => /another process is installing it; waiting/.test(line)));
  assert.ok((await stat(join(modelsDir, "Test_Vocal.onnx"))).size > 0);
  assert.equal((await stat(join(modelsDir, "Test_Vocal.json"))).isFile(), true);
  await assert.rejects(stat(join(downloadsDir(modelsDir), "Test_Vocal.install.lock")), "the lock is released");
});

test("a lock left by a process that died (not touched for 30 s) is taken over", async () => {
  const modelsDir = join(scratch, "stale");
  const lock = join(downloadsDir(modelsDir), "Test_Vocal.install.lock");
  await mkdir(lock, { recursive: true });
  const old = new Date(Date.now() - 60_000);
  await utimes(lock, old, old);
  const started = performance.now();
  const summary = await pullEntry(entry, context(modelsDir, []));
  assert.match(summary, /^installed Test_Vocal/);
  assert.ok(performance.now() - started < 20_000);
  await assert.rejects(stat(lock));
});

test("an install waiting for another one stops when it is cancelled", async () => {
  const modelsDir = join(scratch, "cancelled");
  const lock = join(downloadsDir(modelsDir), "Test_Vocal.install.lock");
  await mkdir(lock, { recursive: true }); // held by a live process: touched just now
  const controller = new AbortController();
  const lines: string[] = [];
  const pulling = pullEntry(entry, { ...context(modelsDir, lines), signal: controller.signal });
  setTimeout(() => controller.abort(new Error("cancelled")), 1500);
  await assert.rejects(pulling, /cancelled/);
  assert.ok(lines.some((line) => /waiting for it to end/.test(line)));
  assert.ok((await stat(lock)).isDirectory(), "the other process's lock stays");
});
