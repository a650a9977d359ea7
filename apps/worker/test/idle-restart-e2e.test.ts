// WORKER_MODEL_IDLE_SECONDS end to end: a worker that ran a separation unloads its models once
// idle, restarts itself cold (the same pid, its memory given back), and loads them again for the
// next job, which succeeds.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { logLines, makeSong, startDeployment, upload, waitForEnd, type Deployment } from "../testing/harness.ts";

/** Resident memory of a process, from the kernel's view (MB). */
async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("a worker whose models idle", () => {
  let d: Deployment;
  before(async () => {
    d = await startDeployment(
      { WORKER_QUEUES: "separation", WORKER_MODEL_IDLE_SECONDS: "3", LOG_LEVEL: "info" },
      { worker: false },
    );
  });
  after(async () => {
    await d?.stop();
  });

  it("unloads them, restarts itself cold under the same pid with its memory given back, and loads them again for the next job", async () => {
    const worker = d.startWorker("pipe");
    const lines = logLines(worker);
    const song = await makeSong("idle.wav", 4);
    const separate = async () => {
      const created = await upload(d, song, "vocal-separations");
      assert.equal(created.status, 200, await created.clone().text());
      const done = await waitForEnd(d, `vocal-separations/${((await created.json()) as { id: number }).id}`);
      assert.equal(done.status, "success", done.errorMessage);
    };
    await separate();
    const loaded = await rssMb(worker.pid!);

    await until("the restart", () => lines.some((l) => l.msg === "restarted after idling: models load with the next job"));
    const restart = lines.find((l) => l.msg === "models idle: restarting to give their memory back")!;
    assert.ok(lines.some((l) => l.msg === "idle: threads and their models unloaded" && l.pool === "separation"));
    const restarted = lines.find((l) => l.msg === "restarted after idling: models load with the next job")!;
    assert.equal(restarted.pid, worker.pid, "execve: the same process");
    assert.equal(worker.exitCode, null);
    // the fresh image holds no model threads: what it weighs once started
    const cold = await rssMb(worker.pid!);
    console.log(
      `worker RSS after a separation ${loaded.toFixed(0)} MB; before its restart ${restart.rssMb} MB; restarted cold ${cold.toFixed(0)} MB`,
    );
    assert.ok(cold < loaded - 50, `cold ${cold.toFixed(0)} MB, loaded ${loaded.toFixed(0)} MB`);

    // the next job loads the models again and succeeds
    await separate();
    assert.ok(lines.some((l) => l.msg === "a job arrived: loading the threads' models again" && l.pool === "separation"));
    assert.ok(lines.filter((l) => l.msg === "separation model runs on cpu").length >= 1);
  });
});
