/**
 * How close each network runs to this machine's limit: the floating-point operations of one run
 * of each ONNX file at batch 1 (one chunk), onnxruntime's time for that run, the achieved GFLOP/s,
 * and that as a share of the peak, measured as onnxruntime's own N x N MatMul on the same threads.
 *
 *   pnpm bench:flops [--models vocals,stems,vocalsplit] [--models-dir DIR] [--threads 2] [--runs 5] [--peak-n 2048]
 *
 * The count (@mixdown/bench's onnx_flops.py, with Debian's python3-onnx) takes MatMul, Gemm, Conv,
 * ConvTranspose and Einsum, 2 FLOPs a multiply-add; shapes from onnx's shape inference and, where
 * it cannot follow the graph, from one onnxruntime run of a copy that outputs the counted nodes'
 * tensors. A run's time is the median of `--runs` after one warm-up, on noise in the graph's
 * shapes, with the sessions' options of the separation (openSession) and the manifest's graph
 * optimisation level. A bag's members each get a row.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { openSession } from "../src/inference-options.ts";
import type { GraphOptimizationLevel } from "../src/manifest.ts";
import { countFlops, flopsCells, matmulGflops, medianRunMs, writePeakMatmul } from "@mixdown/bench/flops";
import { noiseFeeds } from "./noise-feeds.ts";

const REPO = resolve(import.meta.dirname, "../../..");

const { values } = parseArgs({
  options: {
    models: { type: "string", default: "vocals,stems,vocalsplit" },
    "models-dir": { type: "string", default: join(REPO, "models") },
    threads: { type: "string", default: "2" },
    runs: { type: "string", default: "5" },
    "peak-n": { type: "string", default: "2048" },
  },
});
const threads = Number(values.threads);
const runs = Number(values.runs);
const modelsDir = resolve(values["models-dir"]!);

/** Median ms of `runs` runs after a warm-up, at the model's own graph optimisation level. */
async function msPerRun(path: string, level?: GraphOptimizationLevel): Promise<number> {
  const session = await openSession(path, { thread: false, intraOpThreads: threads }, level);
  try {
    const feeds = noiseFeeds(session, path);
    return await medianRunMs(() => session.runMany(feeds, session.outputNames), runs);
  } finally {
    await session.release();
  }
}

/** The dimensions onnxruntime gives every output of `path` (the counted tensors, once exposed). */
async function outputShapes(path: string): Promise<Record<string, number[]>> {
  const session = await openSession(path, { thread: false, intraOpThreads: threads });
  try {
    const outputs = await session.runMany(noiseFeeds(session, path), session.outputNames);
    return Object.fromEntries(Object.entries(outputs).map(([name, out]) => [name, [...out.dims]]));
  } finally {
    await session.release();
  }
}

async function main(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), "mixdown-bench-flops-"));
  try {
    const n = Number(values["peak-n"]);
    const peakModel = join(work, "matmul.onnx");
    await writePeakMatmul(n, peakModel);
    const peakMs = await msPerRun(peakModel);
    const peak = matmulGflops(n, peakMs);
    console.log(
      `# FLOP/s of each network against onnxruntime's ${n} x ${n} MatMul, ${threads} intra-op threads, ${new Date().toISOString()}, ` +
        `${cpus().length} x ${cpus()[0]?.model ?? "cpu"}, load average ${loadavg()[0].toFixed(1)}`,
    );
    console.log(`# peak: ${peak.toFixed(1)} GFLOP/s (${peakMs.toFixed(1)} ms a MatMul, median of ${runs})`);
    console.log("");
    console.log("| model | ONNX file | GFLOP per run (batch 1) | ms per run | GFLOP/s | of the peak | FLOPs by operator |");
    console.log("|---|---|---|---|---|---|---|");
    for (const model of values.models!.split(",")) {
      const manifest = JSON.parse(await readFile(join(modelsDir, `${model}.json`), "utf8")) as {
        file?: string;
        members?: { file: string }[];
        graphOptimization?: GraphOptimizationLevel;
      };
      const files = manifest.members?.map((m) => m.file) ?? [manifest.file!];
      for (const file of files) {
        const path = resolve(modelsDir, file);
        const count = await countFlops(path, work, outputShapes);
        console.log(`| ${model} | ${file} | ${flopsCells(count, await msPerRun(path, manifest.graphOptimization), peak)}`);
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
