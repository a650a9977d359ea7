// The job folders' leases (src/job-folders.ts) on a real filesystem: what a sweep removes, and two
// workers sharing one TMP_DIR, one running a job, the other sweeping.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import pino from "pino";
import { JobFolderKeeper, sweepJobFolders } from "../src/job-folders.ts";

const dirs: string[] = [];
after(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

async function tmpWithJobs(...names: string[]): Promise<{ tmp: string; paths: string[] }> {
  const tmp = await mkdtemp(join(tmpdir(), "mixdown-job-folders-"));
  dirs.push(tmp);
  const paths = names.map((name) => join(tmp, "jobs", name));
  for (const path of paths) {
    await mkdir(path, { recursive: true });
    await writeFile(join(path, "work.wav"), Buffer.alloc(1000));
  }
  return { tmp, paths };
}
const age = (path: string, ms: number) => utimes(path, new Date(Date.now() - ms), new Date(Date.now() - ms));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("a sweep removes the folders untouched for the stale time, never a running job's, and says what it gave back", async () => {
  const { tmp, paths } = await tmpWithJobs("separation-1-0-100", "separation-2-0-100", "tts-3-1-200");
  const [old, , runningOld] = paths as [string, string, string];
  await age(old, 5 * 60_000);
  await age(runningOld, 5 * 60_000);
  const result = await sweepJobFolders(tmp, { running: new Set([runningOld]) });
  assert.deepEqual(result.removed, ["separation-1-0-100"]);
  assert.equal(result.bytes, 1000);
  assert.deepEqual((await readdir(join(tmp, "jobs"))).sort(), ["separation-2-0-100", "tts-3-1-200"]);
  // No jobs folder yet (a new TMP_DIR): nothing to do.
  assert.deepEqual(await sweepJobFolders(join(tmp, "nothing-here")), { removed: [], bytes: 0 });
});

test("two workers on one TMP_DIR: a running job's folder outlives many stale times while its worker renews it, and goes once that worker is gone", async () => {
  const { tmp, paths } = await tmpWithJobs("separation-7-0-300");
  const [folder] = paths as [string];
  const timing = { refreshMs: 100, sweepMs: 50, staleMs: 400 };
  const log = pino({ level: "silent" });
  const owner = new JobFolderKeeper({ tmpDir: tmp, running: () => new Set([folder]), log, ...timing });
  // The other worker knows nothing of the job: only the lease keeps the folder.
  const swept: string[] = [];
  const other = new JobFolderKeeper({
    tmpDir: tmp,
    running: () => new Set(),
    log,
    onSwept: (result) => swept.push(...result.removed),
    ...timing,
  });
  await owner.start();
  await other.start();
  try {
    await sleep(1_500); // almost four stale times
    assert.deepEqual(await readdir(join(tmp, "jobs")), ["separation-7-0-300"], "kept while its worker renews its lease");
    owner.stop(); // the worker is killed: no more renewals, no finally
    for (let waited = 0; swept.length === 0 && waited < 5_000; waited += 50) await sleep(50);
    assert.deepEqual(swept, ["separation-7-0-300"]);
    assert.deepEqual(await readdir(join(tmp, "jobs")), []);
  } finally {
    owner.stop();
    other.stop();
  }
});
