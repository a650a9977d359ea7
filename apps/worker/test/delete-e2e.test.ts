// Deleting a job through the API while a worker runs it: the worker stops, and nothing of the job
// is left in the bucket or the tables, nor written afterwards.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { loadConfig } from "@mixdown/config";
import { createStorage, jobOutputKeys, type ObjectStorage } from "@mixdown/storage";
import { getJson, makeSong, startDeployment, upload, waitForEnd, type Deployment } from "../testing/harness.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("deleting a job through the API while a worker runs it", () => {
  let d: Deployment;
  let storage: ObjectStorage;

  before(async () => {
    d = await startDeployment({ WORKER_QUEUES: "separation", WORKER_CONCURRENCY_SEPARATION: "1" });
    storage = createStorage(loadConfig(d.env));
  });
  after(async () => {
    await storage?.close();
    await d?.stop();
  });

  const del = (route: string) =>
    fetch(`${d.baseUrl}/api/kits/v1/${route}`, { method: "DELETE", headers: { authorization: `Bearer ${d.key}` } });

  it("a running separation: 204, the worker stops, and nothing of the job is in the bucket or the tables afterwards, nor written later; the next job runs", async () => {
    const running = (await (await upload(d, await makeSong("long.wav", 120), "vocal-separations")).json()) as { id: number };
    const row = await d.prisma.separationJob.findUniqueOrThrow({ where: { id: running.id } });
    const deadline = Date.now() + 120_000;
    while ((await getJson(d, `vocal-separations/${running.id}`)).progress < 6) {
      assert.ok(Date.now() < deadline, "the job did not start");
      await sleep(100);
    }
    const res = await del(`vocal-separations/${running.id}`);
    assert.equal(res.status, 204, await res.text());
    const prefix = jobOutputKeys("vocal-separation", running.id).prefix;
    // Past the worker's stop (within 3 s) and its discard of any file it had in flight.
    await sleep(5_000);
    assert.deepEqual(await storage.list(prefix), [], "no output of the deleted job is left or written after");
    assert.equal(await storage.exists(row.inputKey), false, "its upload is gone");
    assert.equal(await d.prisma.separationJob.count({ where: { id: running.id } }), 0);
    assert.equal(await d.prisma.pendingDeletion.count(), 0);
    assert.equal((await del(`vocal-separations/${running.id}`)).status, 404, "a second delete");

    const next = (await (await upload(d, await makeSong("short.wav", 3), "vocal-separations")).json()) as { id: number };
    const ended = await waitForEnd(d, `vocal-separations/${next.id}`);
    assert.equal(ended.status, "success", JSON.stringify(ended));
    assert.ok(
      (await storage.list(jobOutputKeys("vocal-separation", next.id).prefix)).length > 0,
      "the next job's outputs are stored",
    );
  });
});
