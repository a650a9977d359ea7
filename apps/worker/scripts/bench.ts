// End-to-end job benchmark: create -> success through the real API, worker and services, for
// 30 s, 3 min and 10 min songs. Prints job time, the time each model's runs took (a vocal
// separation's split model runs in the same pass as its first, on its own inference thread, so
// the two overlap and each is slowed by the other), the two-step split's steps where it runs (an
// ensemble's vocal: a second pass, the lead written as the remainder), the uploads, and peak
// worker RSS.
// Run: pnpm bench:worker   (a fresh worker process per case, so its peak RSS is that case's)
// [BENCH_SECONDS=30,180,600] [BENCH_JOBS=vocal-separations,stem-splits] [BENCH_STORAGE=s3|local]
import { readFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { makeSong, startDeployment, stopChild, upload, waitForEnd } from "../testing/harness.ts";

const cases = (process.env.BENCH_SECONDS ?? "30,180,600").split(",").map(Number);
// BENCH_JOBS=vocal-separations (or stem-splits) runs only that kind
const routes = (process.env.BENCH_JOBS ?? "vocal-separations,stem-splits").split(",") as Array<
  "vocal-separations" | "stem-splits"
>;
// BENCH_STORAGE=local stores the outputs in a folder, as `./mixdown.sh up` does by default; s3 (the
// default here) sends them to the test stack's S3 server on the same machine.
const storage = process.env.BENCH_STORAGE ?? "s3";
if (storage !== "s3" && storage !== "local") throw new Error(`BENCH_STORAGE takes s3 or local (got ${storage})`);
const d = await startDeployment({ LOG_LEVEL: "info" }, { worker: false, storage });
const rows: string[][] = [];
try {
  for (const seconds of cases) {
    for (const route of routes) {
      // mp3 320k: a 10-minute WAV would be over the 50 MB upload limit.
      const song = await makeSong(`bench-${seconds}.mp3`, seconds, ["-b:a", "320k"]);
      const worker = d.startWorker("pipe");
      const timings: Array<{
        inferenceMs: number;
        decodeMs: number;
        postMs: number;
        encodeMs: number;
        totalMs: number;
        split?: { inferenceMs: number };
      }> = [];
      // the worker's log lines after the first pass: the split's timings, the lead's and the uploads' ms
      let splitMs: number | undefined;
      let splitInferenceMs: number | undefined;
      let leadMs: number | undefined;
      let uploadMs: number | undefined;
      let ready!: () => void;
      const started = new Promise<void>((r) => (ready = r));
      createInterface({ input: worker.stdout! }).on("line", (line) => {
        try {
          const entry = JSON.parse(line);
          if (entry.msg === "worker started") ready();
          if (entry.msg === "separated") timings.push(entry.timings);
          if (entry.msg === "split the vocal") {
            splitMs = entry.timings.totalMs;
            splitInferenceMs = entry.timings.inferenceMs;
          }
          if (entry.msg === "wrote the lead") leadMs = entry.ms;
          if (entry.msg === "uploaded") uploadMs = entry.waitedMs ?? entry.ms;
        } catch {
          // not a log line
        }
      });
      await started;
      let peakKb = 0;
      const sampler = setInterval(async () => {
        const status = await readFile(`/proc/${worker.pid}/status`, "utf8").catch(() => "");
        const hwm = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
        peakKb = Math.max(peakKb, hwm);
      }, 100);

      const t0 = performance.now();
      const res = await upload(d, song, route);
      if (!res.ok) throw new Error(`create ${route} (${seconds} s): ${res.status} ${await res.text()}`);
      const job = (await res.json()) as { id: number };
      const createdMs = performance.now() - t0;
      const done = await waitForEnd(d, `${route}/${job.id}`, 3_600_000);
      const jobMs = performance.now() - t0;
      clearInterval(sampler);
      await stopChild(worker, "SIGTERM");
      if (done.status !== "success") throw new Error(`${route} ${seconds}s ended ${done.status}: ${done.errorMessage}`);
      const t = timings[0]!;
      splitInferenceMs ??= t.split?.inferenceMs;
      rows.push([
        route,
        `${seconds}`,
        (createdMs / 1000).toFixed(2),
        (jobMs / 1000).toFixed(2),
        (t.inferenceMs / 1000).toFixed(2),
        splitInferenceMs === undefined ? "-" : (splitInferenceMs / 1000).toFixed(2),
        (t.totalMs / 1000).toFixed(2),
        [t.decodeMs, t.postMs, t.encodeMs].map((ms) => (ms / 1000).toFixed(2)).join(" / "),
        ...[splitMs, leadMs, uploadMs].map((ms) => (ms === undefined ? "-" : (ms / 1000).toFixed(2))),
        (seconds / (jobMs / 1000)).toFixed(1),
        (peakKb / 1024).toFixed(0),
      ]);
      console.error(`done: ${route} ${seconds}s`);
    }
  }
} finally {
  await d.stop();
}
const header = [
  "job",
  "input s",
  "upload+create s",
  "create->success s",
  "inference s",
  "split inference s",
  "separation s",
  "decode / post / encode s (the pass's own thread)",
  "vocal split s",
  "lead s",
  "upload wait s",
  "x realtime",
  "peak worker RSS MB",
];
console.log(
  `storage: ${storage === "local" ? "a local folder (the default of ./mixdown.sh up)" : "the test stack's S3 server"}\n`,
);
console.log(`| ${header.join(" | ")} |\n|${header.map(() => " --- ").join("|")}|`);
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
