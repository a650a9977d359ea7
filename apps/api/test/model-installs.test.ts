import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { cp, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { ApiKeyRepository } from "@mixdown/db";
import { stopChild } from "@mixdown/devstack";
import { catalogue, files, mirror, sha, vocals } from "@mixdown/model-catalogue/testing";
import { startHarness, type Harness } from "./helpers.ts";

// Model installs from the API, end to end: an operator key asks, a real worker process downloads the
// entry from a local mirror, verifies it as `models pull` does and installs it in MODELS_DIR (a copy
// of the repository's models), and the API's listings see it.

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
let h: Harness;
let worker: ChildProcess;
let workerEnv: NodeJS.ProcessEnv;
const startWorker = () =>
  spawn(process.execPath, ["--import", "tsx", path.join(repoRoot, "apps/worker/src/main.ts")], {
    cwd: repoRoot,
    env: workerEnv,
    stdio: ["ignore", "inherit", "inherit"],
  });
let scratch: string;
let modelsDir: string;
// At the top level: the mirror closes itself in an `after` of this file, not of a hook.
const served = await mirror({ ...files, "/slow/Slow_Vocal.onnx": vocals }, { holdFirst: "/slow/Slow_Vocal.onnx" });
const { seen } = served;
let operator: { key: string; apiKeyId: number; auth: { authorization: string } };
let plain: Awaited<ReturnType<Harness["newCaller"]>>;

before(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), "mixdown-api-installs-"));
  modelsDir = path.join(scratch, "models");
  await cp(path.join(repoRoot, "models"), modelsDir, { recursive: true });
  // The test catalogue, and one entry whose published hash is not its file's.
  const list = await catalogue(scratch);
  const parsed = JSON.parse(await readFile(list, "utf8")) as { models: Array<Record<string, unknown>> };
  const bad = structuredClone(parsed.models[0]!) as { name: string; files: Array<{ sha256: string; uvrHash?: string }> };
  bad.name = "Bad_Vocal";
  bad.files[0]!.sha256 = "ab".repeat(32);
  delete bad.files[0]!.uvrHash;
  // One whose first download stalls after 1 MB (the mirror holds it): the worker is killed there.
  const slow = structuredClone(parsed.models[0]!) as {
    name: string;
    importFile: string;
    files: Array<{ name: string; url: string }>;
  };
  slow.name = "Slow_Vocal";
  slow.importFile = "Slow_Vocal.onnx";
  slow.files[0]!.name = "Slow_Vocal.onnx";
  slow.files[0]!.url = "https://models.example.org/slow/Slow_Vocal.onnx";
  parsed.models.push(bad, slow);
  await writeFile(list, JSON.stringify(parsed));
  const env = { MODELS_DIR: modelsDir, MIXDOWN_MODEL_CATALOGUE: list, MIXDOWN_MODEL_MIRROR: served.base };
  h = await startHarness("local", { ...env, RECONCILE_INTERVAL_SECONDS: "2", RECONCILE_GRACE_SECONDS: "5" });
  workerEnv = {
    ...process.env,
    ...h.stack.env,
    ...env,
    LOG_LEVEL: "warn",
    // A killed worker's job is taken up again within seconds.
    WORKER_LOCK_DURATION_MS: "5000",
    WORKER_STALLED_INTERVAL_MS: "2000",
  };
  worker = startWorker();
  const created = await new ApiKeyRepository(h.prisma).createApiKey({ name: "operator", operator: true });
  operator = { key: created.key, apiKeyId: created.id, auth: { authorization: `Bearer ${created.key}` } };
  plain = await h.newCaller("plain");
});

after(async () => {
  if (worker) await stopChild(worker, "SIGTERM");
  await h?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const request = (method: "GET" | "POST", url: string, auth: { authorization: string }, payload?: object) =>
  h.app.inject({ method, url: `/api/kits/v1${url}`, headers: auth, ...(payload ? { payload } : {}) });

async function waitForEnd(
  id: number,
): Promise<{ status: string; progress: number; errorMessage: string | null; seen: number[] }> {
  const progress: number[] = [];
  const deadline = Date.now() + 240_000;
  for (;;) {
    const body = (await request("GET", `/model-installs/${id}`, operator.auth)).json();
    progress.push(body.progress);
    if (body.status !== "running") return { ...body, seen: progress };
    assert.ok(Date.now() < deadline, `install ${id} still running after 240 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("operator keys", () => {
  test("a key that is not an operator's is answered 403 naming the operator key on every operator route, and nothing is queued", async () => {
    const cases = [
      await request("POST", "/model-installs", plain.auth, { name: "Test_Vocal" }),
      await request("GET", "/model-installs", plain.auth),
      await request("GET", "/model-installs/1", plain.auth),
      await request("GET", "/usage?all=true", plain.auth),
    ];
    for (const answer of cases) {
      assert.equal(answer.statusCode, 403, answer.body);
      assert.match(
        answer.json().message,
        /needs an operator key, and key mxd_[\w-]+… is not one .*keys create --name NAME --operator/,
      );
    }
    assert.equal(await h.prisma.modelInstall.count(), 0);
    assert.equal(await h.app.ctx.queues.queue("model-install").count(), 0);
    // Its own usage stays its own.
    assert.equal((await request("GET", "/usage", plain.auth)).json().keys, undefined);
  });

  test("GET /usage?all=true gives an operator every caller's keys with their month", async () => {
    const answer = await request("GET", "/usage?all=true", operator.auth);
    assert.equal(answer.statusCode, 200, answer.body);
    const keys = answer.json().keys as Array<{ apiKeyId: number; callerName: string; revoked: boolean; jobs: number }>;
    const ids = keys.map((k) => k.apiKeyId);
    assert.ok(ids.includes(plain.apiKeyId) && ids.includes(operator.apiKeyId), JSON.stringify(ids));
    assert.equal(keys.find((k) => k.apiKeyId === plain.apiKeyId)?.callerName, "plain");
  });
});

describe("model installs", () => {
  test("a name not in the catalogue is 422 naming it, a bad body 4xx; nothing is stored or queued", async () => {
    const unknown = await request("POST", "/model-installs", operator.auth, { name: "htdemucs_nope" });
    assert.equal(unknown.statusCode, 422, unknown.body);
    assert.match(unknown.json().message, /name: "htdemucs_nope" is not in the model catalogue/);
    const missing = await request("POST", "/model-installs", operator.auth, {});
    assert.ok(missing.statusCode === 400 || missing.statusCode === 422, missing.body);
    assert.match(missing.json().message, /name/);
    assert.equal(await h.prisma.modelInstall.count(), 0);
    assert.equal(await h.app.ctx.queues.queue("model-install").count(), 0);
  });

  test("an operator installs a catalogue model: one install however often asked while it runs, run by the worker through the mirror, verified, then listed as installed", async () => {
    const before = await request("GET", "/model-catalogue", operator.auth);
    const entry = (name: string, body = before.json()) =>
      (body.data as Array<{ name: string; installed: boolean; lastInstall: { id: number; status: string } | null }>).find(
        (m) => m.name === name,
      )!;
    assert.deepEqual([entry("Test_Vocal").installed, entry("Test_Vocal").lastInstall], [false, null]);

    const [first, second] = await Promise.all([
      request("POST", "/model-installs", operator.auth, { name: "Test_Vocal" }),
      request("POST", "/model-installs", operator.auth, { name: "Test_Vocal" }),
    ]);
    const answers = [first, second].map((a) => a.statusCode).sort();
    assert.deepEqual(answers, [200, 202], `${first.body} ${second.body}`);
    const id = first.json().id as number;
    assert.equal(second.json().id, id, "the second request found the running install");
    assert.equal(first.json().name, "Test_Vocal");
    assert.equal(await h.prisma.modelInstall.count(), 1);

    const ended = await waitForEnd(id);
    assert.equal(ended.status, "success", ended.errorMessage ?? "");
    assert.equal(ended.progress, 100);
    assert.ok(
      ended.seen.every((p, i) => i === 0 || p >= ended.seen[i - 1]!),
      `progress never goes back: ${ended.seen.join(",")}`,
    );
    const record = (await request("GET", `/model-installs/${id}`, operator.auth)).json();
    assert.match(record.summary, /^installed Test_Vocal \(mdx; stems vocals, backing\)/);
    assert.deepEqual(
      seen.map((s) => s.path),
      ["/uvr/Test_Vocal.onnx"],
      "one download, from the mirror",
    );
    assert.deepEqual(await readFile(path.join(modelsDir, "Test_Vocal.onnx")).then(sha), sha(vocals));
    assert.deepEqual(await readdir(path.join(modelsDir, ".downloads")), [], "the verified download is gone once installed");

    const listed = (await request("GET", "/model-catalogue", operator.auth)).json();
    assert.equal(entry("Test_Vocal", listed).installed, true);
    assert.deepEqual(
      [entry("Test_Vocal", listed).lastInstall?.id, entry("Test_Vocal", listed).lastInstall?.status],
      [id, "success"],
    );
    const plainView = (await request("GET", "/model-catalogue", plain.auth)).json();
    assert.equal(entry("Test_Vocal", plainView).lastInstall, null, "only an operator sees the installs");
    const models = (await request("GET", "/separation-models", plain.auth)).json().data as Array<{ name: string }>;
    assert.ok(
      models.some((m) => m.name === "Test_Vocal"),
      "a separation can name it now",
    );

    const again = await request("POST", "/model-installs", operator.auth, { name: "Test_Vocal" });
    assert.equal(again.statusCode, 409, again.body);
    assert.match(again.json().message, /Test_Vocal is installed already/);
    const list = (await request("GET", "/model-installs?order=desc", operator.auth)).json();
    assert.deepEqual(
      list.data.map((r: { id: number }) => r.id),
      [id],
    );
    assert.equal(list.meta.total, 1);
  });

  test("a download whose hash is not the published one ends the install `error` naming both hashes, and installs nothing", async () => {
    const started = await request("POST", "/model-installs", operator.auth, { name: "Bad_Vocal" });
    assert.equal(started.statusCode, 202, started.body);
    const ended = await waitForEnd(started.json().id);
    assert.equal(ended.status, "error");
    assert.match(
      ended.errorMessage ?? "",
      new RegExp(`cannot install Bad_Vocal: .*SHA-256 mismatch: expected ${"ab".repeat(32)}, got ${sha(vocals)}`),
    );
    assert.ok(!(await readdir(modelsDir)).some((f) => f.startsWith("Bad_Vocal")), "nothing installed");
    // Ended: a new request starts a new install (which fails the same way).
    const retry = await request("POST", "/model-installs", operator.auth, { name: "Bad_Vocal" });
    assert.equal(retry.statusCode, 202);
    assert.notEqual(retry.json().id, started.json().id);
    await waitForEnd(retry.json().id);
  });

  test("a worker killed mid-download loses nothing: another takes the install up, resumes the download where it stopped, and it ends `success` once", async () => {
    const started = await request("POST", "/model-installs", operator.auth, { name: "Slow_Vocal" });
    assert.equal(started.statusCode, 202, started.body);
    const partial = path.join(modelsDir, ".downloads", "Slow_Vocal", "Slow_Vocal.onnx.part");
    const deadline = Date.now() + 120_000;
    while ((await stat(partial).catch(() => null))?.size !== 1024 * 1024) {
      assert.ok(Date.now() < deadline, "the download never reached 1 MB");
      await new Promise((r) => setTimeout(r, 100));
    }
    worker.kill("SIGKILL");
    await once(worker, "exit");
    worker = startWorker();
    const ended = await waitForEnd(started.json().id);
    assert.equal(ended.status, "success", ended.errorMessage ?? "");
    const requests = seen.filter((s) => s.path === "/slow/Slow_Vocal.onnx");
    assert.equal(requests.length, 2, JSON.stringify(requests));
    assert.equal(requests[1]!.range, `bytes=${1024 * 1024}-`, "the second worker resumed the partial download");
    assert.deepEqual(await readFile(path.join(modelsDir, "Slow_Vocal.onnx")).then(sha), sha(vocals));
    assert.equal(await h.prisma.modelInstall.count({ where: { name: "Slow_Vocal" } }), 1, "one install, not two");
  });
});
