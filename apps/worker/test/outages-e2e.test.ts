import assert from "node:assert/strict";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { makeSong, startDeployment, stopChild, upload, type Deployment } from "../testing/harness.ts";

async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

let d: Deployment;
before(async () => {
  d = await startDeployment(
    {
      // Short waits, many tries: the outages below last as long as the test makes them.
      STORAGE_RETRY_ATTEMPTS: "60",
      STORAGE_RETRY_DELAY_MS: "250",
      JOB_END_WRITE_ATTEMPTS: "60",
      JOB_END_WRITE_DELAY_MS: "250",
    },
    { worker: false },
  );
});
after(async () => {
  await d?.stack.s3.resume();
  await d?.stack.postgres.resume();
  await d?.stop();
});

test("a vocal separation whose uploads meet an S3 outage and whose end meets a PostgreSQL outage succeeds once, with its own outputs", async () => {
  const worker = d.startWorker("pipe");
  const lines: Array<{ msg: string; [field: string]: unknown }> = [];
  createInterface({ input: worker.stdout! }).on("line", (line) => {
    try {
      lines.push(JSON.parse(line));
    } catch {
      // not a log line
    }
  });
  const logged = (msg: string) => lines.some((l) => l.msg === msg);

  const song = await makeSong("outage.wav", 4);
  const res = await upload(d, song, "vocal-separations");
  assert.equal(res.status, 200);
  const id = ((await res.json()) as { id: number }).id;
  const row = () => d.prisma.separationJob.findUniqueOrThrow({ where: { id } });

  // The input is read; S3 goes away while the model runs, and stays away until an upload has met it.
  await waitUntil("the separation is under way", async () => (await row()).progress > 0);
  await d.stack.s3.halt();
  await waitUntil("an output upload met the outage", () => logged("object storage unavailable; trying again"));
  // The database goes too, and comes back only once the worker has had to wait to publish.
  await d.stack.postgres.halt();
  await d.stack.s3.resume();
  await waitUntil("the end met the database's outage", () =>
    logged("the database is unavailable; will publish the outputs again"),
  );
  await d.stack.postgres.resume();

  await waitUntil("the job ended", async () => (await row()).status !== "running");
  const ended = await row();
  assert.equal(ended.status, "success", ended.errorMessage ?? "");
  assert.equal(ended.progress, 100);
  assert.equal(
    logged("job attempt failed"),
    false,
    `no attempt failed: the outages were ridden out inside it; failed: ${JSON.stringify(lines.filter((l) => l.msg === "job attempt failed"))}`,
  );
  const keys = await d.api.ctx.storage.list(`outputs/vocal-separation/${id}/`);
  assert.deepEqual(
    keys,
    ["backing", "harmony", "lead", "reverb", "vocals"]
      .flatMap((f) => [`${f}.mp3`, `${f}.wav`])
      .map((f) => `outputs/vocal-separation/${id}/${f}`)
      .sort(),
  );
  const waits = lines.filter((l) => l.msg === "object storage unavailable; trying again");
  console.log(
    `${waits.length} storage waits (${[...new Set(waits.map((w) => w.key))].length} keys), ` +
      `${lines.filter((l) => l.msg === "the database is unavailable; will publish the outputs again").length} end-write waits`,
  );
  await stopChild(worker, "SIGTERM");
});
