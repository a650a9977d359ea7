// What idling gives back (WORKER_MODEL_IDLE_SECONDS): one worker process runs a vocal separation
// of a 60 s song (models loaded at start), a second one warm, then idles until it has unloaded its
// models and restarted itself cold, then runs a third, which loads them again. Prints each job's
// create->success time, the worker's RSS after each step, and the third job's extra wait.
// Run: pnpm bench:idle   [BENCH_SECONDS=60] [BENCH_IDLE_SECONDS=5] [BENCH_ROUTE=vocal-separations|stem-splits]
import { readFile } from "node:fs/promises";
import { logLines, makeSong, startDeployment, upload, waitForEnd } from "../testing/harness.ts";

const seconds = Number(process.env.BENCH_SECONDS ?? 60);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 5);
const route = (process.env.BENCH_ROUTE ?? "vocal-separations") as "vocal-separations" | "stem-splits";

const rssMb = async (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const d = await startDeployment(
  { LOG_LEVEL: "info", WORKER_QUEUES: "separation", WORKER_MODEL_IDLE_SECONDS: String(idleSeconds) },
  { worker: false, storage: "local" },
);
try {
  const song = await makeSong(`bench-idle-${seconds}.mp3`, seconds, ["-b:a", "320k"]);
  const worker = d.startWorker("pipe");
  const lines = logLines(worker);
  while (!lines.some((l) => l.msg === "worker started")) await sleep(100);
  const started = await rssMb(worker.pid!);
  const job = async () => {
    const t0 = performance.now();
    const created = await upload(d, song, route);
    if (created.status !== 200) throw new Error(`create: ${created.status} ${await created.text()}`);
    const done = await waitForEnd(d, `${route}/${((await created.json()) as { id: number }).id}`, 1_800_000);
    if (done.status !== "success") throw new Error(`job ended ${done.status}: ${done.errorMessage}`);
    return (performance.now() - t0) / 1000;
  };
  const first = await job();
  const afterFirst = await rssMb(worker.pid!);
  const warm = await job();
  const afterWarm = await rssMb(worker.pid!);
  const idleFrom = performance.now();
  while (!lines.some((l) => l.msg === "restarted after idling: models load with the next job")) await sleep(100);
  const restartedAfter = (performance.now() - idleFrom) / 1000;
  await sleep(2_000);
  const cold = await rssMb(worker.pid!);
  const coldJob = await job();
  const afterCold = await rssMb(worker.pid!);
  const unloaded = lines.find((l) => l.msg === "models idle: restarting to give their memory back");
  console.log(`\n${route} of a ${seconds} s song, WORKER_MODEL_IDLE_SECONDS=${idleSeconds} (${new Date().toISOString()})`);
  console.log(`worker started, models loaded: ${started.toFixed(0)} MB`);
  console.log(`job 1 (models loaded at start): ${first.toFixed(1)} s, then ${afterFirst.toFixed(0)} MB`);
  console.log(`job 2 (warm): ${warm.toFixed(1)} s, then ${afterWarm.toFixed(0)} MB`);
  console.log(
    `idle: threads unloaded and restarted cold ${restartedAfter.toFixed(1)} s after job 2 (RSS before the restart ${String(unloaded?.rssMb)} MB); cold: ${cold.toFixed(0)} MB`,
  );
  console.log(
    `job 3 (after the restart, loads the models): ${coldJob.toFixed(1)} s (+${(coldJob - warm).toFixed(1)} s over warm), then ${afterCold.toFixed(0)} MB`,
  );
} finally {
  await d.stop();
}
