/**
 * onnxruntime's graph optimisation levels side by side: for each ONNX file and level, a process of
 * its own (started as the worker's are: modelProcessEnv, so jemalloc where installed) opens the
 * file's session as the separation does (openSession, on the calling thread), runs one chunk of
 * noise `--runs` times after a warm-up, and reports the median ms per run and the process's peak
 * RSS. The levels alternate over `--rounds`, so a busy moment does not fall on one level only.
 *
 *   pnpm bench:graph-levels [--models vocals,vocalsplit,stems | --models path/to/a.onnx,...]
 *       [--models-dir DIR] [--levels all,extended] [--threads 2] [--runs 40] [--rounds 3]
 *
 * The level a model runs at is its manifest's `graphOptimization` (README, "Models: manifest format").
 */
import { execFile } from "node:child_process";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { parseArgs } from "node:util";
import { modelProcessEnv } from "../src/allocator.ts";
import { openSession } from "../src/inference-options.ts";
import { GRAPH_OPTIMIZATION_LEVELS, type GraphOptimizationLevel } from "../src/manifest.ts";
import { medianRunMs } from "@mixdown/bench/flops";
import { noiseFeeds } from "./noise-feeds.ts";
import { statusMb } from "./process-status.ts";

const REPO = resolve(import.meta.dirname, "../../..");

const { values } = parseArgs({
  options: {
    models: { type: "string", default: "vocals,vocalsplit,stems" },
    "models-dir": { type: "string", default: join(REPO, "models") },
    levels: { type: "string", default: "all,extended" },
    threads: { type: "string", default: "2" },
    runs: { type: "string", default: "40" },
    rounds: { type: "string", default: "3" },
    child: { type: "string" },
    level: { type: "string" },
  },
});

async function child(path: string, level: GraphOptimizationLevel): Promise<void> {
  const session = await openSession(path, { thread: false, intraOpThreads: Number(values.threads) }, level);
  const feeds = noiseFeeds(session, path);
  const ms = await medianRunMs(() => session.runMany(feeds, session.outputNames), Number(values.runs));
  console.log(JSON.stringify({ ms, peakRssMb: Math.round(await statusMb("VmHWM")) }));
}

async function main(): Promise<void> {
  const levels = values.levels!.split(",") as GraphOptimizationLevel[];
  for (const level of levels)
    if (!GRAPH_OPTIMIZATION_LEVELS.includes(level))
      throw new Error(`--levels: ${level} is not one of ${GRAPH_OPTIMIZATION_LEVELS.join(", ")}`);
  const paths = values
    .models!.split(",")
    .map((m) => (m.endsWith(".onnx") ? resolve(m) : join(resolve(values["models-dir"]!), `${m}.onnx`)));
  const rounds = Number(values.rounds);
  const results = new Map<string, { ms: number; peakRssMb: number }[]>();
  const run = promisify(execFile);
  console.error(
    `load average at start: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  for (let round = 0; round < rounds; round++) {
    for (const path of paths) {
      // odd rounds reverse the order, so neither level always runs first
      for (const level of round % 2 === 0 ? levels : [...levels].reverse()) {
        const { stdout } = await run(
          process.execPath,
          [
            ...process.execArgv,
            import.meta.filename,
            "--child",
            path,
            "--level",
            level,
            "--threads",
            values.threads!,
            "--runs",
            values.runs!,
          ],
          { env: modelProcessEnv({ ...process.env }), maxBuffer: 1 << 20 },
        );
        const key = `${path}\0${level}`;
        results.set(key, [...(results.get(key) ?? []), JSON.parse(stdout.trim().split("\n").at(-1)!)]);
      }
    }
  }
  console.log(`| model | level | median ms per run (each round) | peak RSS MB (each round) |`);
  console.log(`| --- | --- | --- | --- |`);
  for (const path of paths)
    for (const level of levels) {
      const rows = results.get(`${path}\0${level}`)!;
      console.log(
        `| ${path.startsWith(REPO) ? path.slice(REPO.length + 1) : path} | ${level} | ${rows.map((r) => r.ms.toFixed(1)).join(", ")} | ${rows.map((r) => r.peakRssMb).join(", ")} |`,
      );
    }
  console.error(
    `load average at end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
}

if (values.child) await child(values.child, values.level as GraphOptimizationLevel);
else await main();
