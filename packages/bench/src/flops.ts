/**
 * The pieces of a FLOP/s table (`bench:flops`, `bench:voice --flops`): the floating-point
 * operations of one run of an ONNX graph (`onnx_flops.py` beside this file, Debian's python3-onnx), the
 * machine's peak as onnxruntime's own N x N MatMul, and a table row. The caller times the runs
 * and gives the shapes onnxruntime saw, with its own sessions and inputs.
 */
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pythonCommand, runProcess } from "@mixdown/python";

const COUNTER = join(import.meta.dirname, "onnx_flops.py");

async function python(args: string[]): Promise<string> {
  const result = await runProcess(await pythonCommand(), [COUNTER, ...args]);
  if (result.code !== 0)
    throw new Error(`onnx_flops.py ${args[0]} failed: ${result.stderr.trim().split("\n").slice(-5).join("\n")}`);
  return result.stdout;
}

export interface FlopCount {
  gflop: number;
  nodes: number;
  uncounted: string[];
  ops: Record<string, number>;
}

/**
 * FLOPs of one run of `onnxPath`, its symbolic input dimensions set by name from `sizes` (the rest
 * 1: one chunk at batch 1). Shapes come from onnx's shape inference; where it cannot follow the
 * graph, `shapesOf` runs a copy (its path given) that outputs those tensors, at the same sizes,
 * and returns the dimensions of every output.
 */
export async function countFlops(
  onnxPath: string,
  work: string,
  shapesOf: (exposedPath: string) => Promise<Record<string, number[]>>,
  sizes: Record<string, number> = {},
): Promise<FlopCount> {
  const exposed = join(work, "exposed.onnx");
  const shapes = join(work, "shapes.json");
  const sized = JSON.stringify(sizes);
  await python(["expose", onnxPath, exposed, sized]);
  try {
    await writeFile(shapes, JSON.stringify(await shapesOf(exposed)));
  } finally {
    await rm(exposed, { force: true });
  }
  return JSON.parse((await python(["count", onnxPath, shapes, sized])).trim().split("\n").at(-1)!) as FlopCount;
}

/** Median ms of `runs` calls of `run` after one warm-up call. */
export async function medianRunMs(run: () => Promise<unknown>, runs: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const start = performance.now();
    await run();
    if (i > 0) times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

/** GFLOP/s of an N x N by N x N MatMul that took `ms`. */
export function matmulGflops(n: number, ms: number): number {
  return (2 * n ** 3) / (ms / 1000) / 1e9;
}

/** Writes onnxruntime's N x N by N x N MatMul to `path`: timed, it is the machine's peak. */
export async function writePeakMatmul(n: number, path: string): Promise<void> {
  await python(["matmul", String(n), path]);
}

/** "| GFLOP | ms | GFLOP/s | of the peak | FLOPs by operator |" of one graph's run. */
export function flopsCells(count: FlopCount, ms: number, peakGflops: number): string {
  const rate = count.gflop / (ms / 1000);
  const ops = Object.entries(count.ops)
    .sort((a, b) => b[1] - a[1])
    .map(([op, g]) => `${op} ${((100 * g) / count.gflop).toFixed(0)} %`)
    .join(", ");
  const missing = count.uncounted.length > 0 ? ` (${count.uncounted.length} nodes without shapes, not counted)` : "";
  return `${count.gflop.toFixed(2)} | ${ms.toFixed(1)} | ${rate.toFixed(1)} | ${((100 * rate) / peakGflops).toFixed(0)} % | ${ops}${missing} |`;
}
