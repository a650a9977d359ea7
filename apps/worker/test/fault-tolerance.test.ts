import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { S3Client, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { makeSong, startDeployment, stopChild, upload, type Deployment } from "../testing/harness.ts";

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 240_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  if (process.env.TEST_DEBUG) console.error(new Date().toISOString(), "waiting until", what);
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("nothing is lost when workers die and Redis restarts", () => {
  let d: Deployment;
  before(async () => {
    d = await startDeployment();
  });
  after(async () => {
    await d?.stop();
  });

  it("finishes 10 jobs exactly once through two worker SIGKILLs and a Redis restart", async () => {
    const song = await makeSong("fault.wav", 4);
    const ids: number[] = [];
    // Enough for a job to be under way at each of the three faults (20 took 3-5 minutes).
    for (let i = 0; i < 10; i++) {
      const res = await upload(d, song, "vocal-separations");
      assert.equal(res.status, 200);
      ids.push(((await res.json()) as { id: number }).id);
    }
    const succeeded = () => d.prisma.separationJob.count({ where: { id: { in: ids }, status: "success" } });
    const underWay = async () =>
      (await d.prisma.separationJob.count({ where: { id: { in: ids }, status: "running", progress: { gt: 0 } } })) > 0;

    // Kill the worker in the middle of a job: its lock lapses and another worker takes the job again.
    await waitUntil("a job is under way", underWay);
    d.worker.kill("SIGKILL");
    d.worker = d.startWorker();

    await waitUntil("three jobs succeeded", async () => (await succeeded()) >= 3);
    await d.stack.redis.restart();

    await waitUntil("six jobs succeeded and another is under way", async () => (await succeeded()) >= 6 && (await underWay()));
    d.worker.kill("SIGKILL");
    d.worker = d.startWorker();

    await waitUntil(
      "every job ended",
      async () => (await d.prisma.separationJob.count({ where: { id: { in: ids }, status: "running" } })) === 0,
    );
    const rows = await d.prisma.separationJob.findMany({ where: { id: { in: ids } }, orderBy: { id: "asc" } });
    for (const row of rows) {
      assert.equal(row.status, "success", `job ${row.id}: ${row.errorMessage}`);
      assert.equal(row.progress, 100);
      assert.deepEqual(
        (row.stems as Array<{ instrument: string }>).map((s) => s.instrument),
        ["vocals", "harmony", "reverb", "backing"],
      );
    }

    // Each job counts once in its key's usage, its input's 4 s, though killed attempts ran it again.
    const usage = await d.prisma.usageRecord.findMany({ where: { rowId: { in: ids } }, orderBy: { rowId: "asc" } });
    assert.deepEqual(
      usage.map((u) => [u.jobKind, u.rowId, u.seconds]),
      ids.map((id) => ["vocal_separation", id, 4]),
    );

    // Each job's outputs exist once, under its own keys: no duplicates, no strays from killed attempts.
    const s3 = new S3Client({
      endpoint: d.env.S3_ENDPOINT,
      region: d.env.S3_REGION,
      forcePathStyle: true,
      credentials: { accessKeyId: d.env.S3_ACCESS_KEY_ID!, secretAccessKey: d.env.S3_SECRET_ACCESS_KEY! },
    });
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: d.env.S3_BUCKET, Prefix: "outputs/" }));
    const keys = (listed.Contents ?? []).map((o) => o.Key!).sort();
    const expected = ids
      .flatMap((id) =>
        ["backing", "harmony", "lead", "reverb", "vocals"]
          .flatMap((f) => [`${f}.mp3`, `${f}.wav`])
          .map((f) => `outputs/vocal-separation/${id}/${f}`),
      )
      .sort();
    assert.deepEqual(keys, expected);
    s3.destroy();
    await stopChild(d.worker, "SIGTERM");
  });
});
