/**
 * Separation benchmark for synthetic 30 s, 3 min and 10 min songs through the
 * default models: the wall time of separateFile against the inference time
 * alone (the model run on as many chunks again, back to back, with nothing
 * else going on), the realtime factor, where the calling thread's time went
 * (waiting for decoded audio, waiting for onnxruntime, STFT/iSTFT and
 * overlap-add, waiting for the encoders), RSS once the model is loaded and the
 * separation's peak RSS (read before the inference-alone reference, which opens sessions of
 * its own for the families other than MDX-Net). Each case runs in its
 * own process so its peak RSS (VmHWM) is its own.
 *
 *   pnpm bench:separation [--models vocals,stems] [--durations 30,180,600]
 *                         [--models-dir DIR] [--threads N] [--batch N] [--format wav|flac] [--spin-wait] [--stft-helper on|off]
 *                         [--torch-checkpoint FILE [--torch-config YAML] [--torch-threads N]]
 *   pnpm bench:separation --upstream DIR --models NAME --upstream-checkpoint FILE [--upstream-config YAML]
 *                         [--upstream-pythonpath P1:P2] [--upstream-python PY] [--durations 10,60,600]
 *                         [--threads 2] [--order upstream-first|mixdown-first] [--keep DIR]
 *
 * Every family runs. "Inference alone" is, for MDX-Net, the same batches again on the warm
 * session; for the other families, the median time of one chunk at batch 1 on a fresh session of
 * each of the model's ONNX files (all of a bag's members), times the chunks the separation ran.
 * `--torch-checkpoint` (one model) also times the same network in PyTorch (Mixdown's own
 * implementation, pinned to the upstream's output by the exactness fixtures; Debian's torch) per
 * chunk, against onnxruntime's time per chunk.
 *
 * `--upstream DIR` runs the upstream tool's own command line (demucs's `demucs.separate` for
 * HTDemucs, MSST's `inference.py` for the RoFormers and MDX23C; DIR is its checkout) beside
 * `./mixdown.sh separate` on the checkpoint the model was imported from: see bench-upstream.ts.
 * `--durations` must then be given (10,60,600 for HTDemucs, 10,30 for the MSST families).
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { prepareFfmpeg } from "@mixdown/audio";
import { MdxModel } from "../src/families/mdx/model.ts";
import { openSession } from "../src/inference-options.ts";
import { pythonCommand, runProcess } from "@mixdown/python";
import { EXPORTER_PATH } from "../src/import/python-runtime.ts";
import { ModelRegistry } from "../src/model-registry.ts";
import { separateFile } from "../src/separate-file.ts";
import { noiseFeeds } from "./noise-feeds.ts";
import { statusMb } from "./process-status.ts";
import { BENCH_CACHE, syntheticSong } from "./synthetic-song.ts";
import { DEFAULT_BATCH_SIZE } from "../src/separate-stream.ts";

const REPO = resolve(import.meta.dirname, "../../..");
const CACHE = BENCH_CACHE;

interface CaseSpec {
  model: string;
  modelsDir: string;
  input: string;
  seconds: number;
  threads?: number;
  batch?: number;
  spinWait: boolean;
  helperThread: boolean;
  format: "wav" | "flac";
}

interface CaseResult extends CaseSpec {
  loadMs: number;
  totalMs: number;
  decodeMs: number;
  inferenceMs: number;
  inferenceWaitMs: number;
  /** the same number of session.run calls again, back to back, with nothing else running */
  inferenceAloneMs: number;
  /** one chunk at batch 1, alone (families other than MDX-Net) */
  msPerChunkAlone?: number;
  family: string;
  postMs: number;
  encodeMs: number;
  chunks: number;
  /** RSS once the model is loaded and warmed up, before the separation */
  loadedRssMb: number;
  peakRssMb: number;
}

/** Child side: one separation, result as JSON on stdout. */
async function runCase(spec: CaseSpec): Promise<void> {
  const registry = new ModelRegistry({
    modelsDir: spec.modelsDir,
    spinWait: spec.spinWait,
    ...(spec.threads ? { intraOpThreads: spec.threads } : {}),
  });
  const loadStart = performance.now();
  // start-up work a long-lived worker does once: the session and ffmpeg's capability cache
  // the bench's models are MDX-Net ones: its inference-alone reference feeds their spectrogram input
  const [model] = (await Promise.all([registry.load(spec.model), prepareFfmpeg()])) as [MdxModel, unknown];
  const loadMs = performance.now() - loadStart;
  const loadedRssMb = await statusMb("VmRSS");
  const outDir = await mkdtemp(join(tmpdir(), "mixdown-bench-out-"));
  try {
    const result = await separateFile({
      inputPath: spec.input,
      model,
      outDir,
      outputs: [{ format: spec.format }],
      helperThread: spec.helperThread,
      ...(spec.batch ? { batchSize: spec.batch } : {}),
    });
    const peakRssMb = await statusMb("VmHWM");
    let inferenceAloneMs: number;
    let msPerChunkAlone: number | undefined;
    const manifest = model.manifest as { architecture: string; file: string; members?: { file: string }[] };
    if (model instanceof MdxModel) {
      // the reference: the model alone on as many chunks, in the same batches
      const batch = Math.min(spec.batch ?? DEFAULT_BATCH_SIZE, model.maxBatch);
      const { dimF, dimT } = model.manifest;
      const input = new Float32Array(batch * 4 * dimF * dimT);
      for (let i = 0; i < input.length; i++) input[i] = Math.random() - 0.5;
      const aloneStart = performance.now();
      for (let left = result.chunks; left > 0; left -= batch) {
        const n = Math.min(batch, left);
        await model.run(n === batch ? input : input.subarray(0, n * 4 * dimF * dimT), n);
      }
      inferenceAloneMs = performance.now() - aloneStart;
    } else {
      msPerChunkAlone = await msPerChunk(spec, manifest);
      inferenceAloneMs = msPerChunkAlone * result.chunks;
    }
    const out: CaseResult = {
      ...spec,
      loadMs,
      ...result.timings,
      inferenceAloneMs,
      ...(msPerChunkAlone !== undefined ? { msPerChunkAlone } : {}),
      family: manifest.architecture,
      chunks: result.chunks,
      loadedRssMb,
      peakRssMb,
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    await rm(outDir, { recursive: true, force: true });
    await registry.close();
  }
}

/**
 * One chunk at batch 1 through each ONNX file of a model (a bag's members in turn) on a fresh
 * session with the bench's threads: the median of 3 runs after a warm-up, the members' mean.
 * Inputs are noise in the graph's own shapes (symbolic dimensions, the batch, set to 1).
 */
async function msPerChunk(spec: CaseSpec, manifest: { file: string; members?: { file: string }[] }): Promise<number> {
  const files = manifest.members?.map((m) => m.file) ?? [manifest.file];
  let total = 0;
  for (const file of files) {
    const session = await openSession(join(spec.modelsDir, file), {
      thread: false,
      ...(spec.threads ? { intraOpThreads: spec.threads } : {}),
    });
    try {
      const feeds = noiseFeeds(session, file);
      const times: number[] = [];
      for (let run = 0; run < 4; run++) {
        const start = performance.now();
        await session.runMany(feeds, session.outputNames);
        if (run > 0) times.push(performance.now() - start);
      }
      total += times.sort((a, b) => a - b)[1]!;
    } finally {
      await session.release();
    }
  }
  return total / files.length;
}

/** The same network in PyTorch (`python -m mixdown_export.bench_forward`): ms per chunk at batch 1. */
async function torchMsPerChunk(family: string, checkpoint: string, config: string | undefined, threads: number): Promise<number> {
  const args = ["-m", "mixdown_export.bench_forward", family, "--checkpoint", checkpoint, "--threads", String(threads)];
  if (config) args.push("--config", config);
  const result = await runProcess(await pythonCommand(), args, { env: { ...process.env, PYTHONPATH: EXPORTER_PATH } });
  if (result.code !== 0) throw new Error(`bench_forward failed: ${result.stderr.trim().split("\n").slice(-5).join("\n")}`);
  return (JSON.parse(result.stdout.trim().split("\n").at(-1)!) as { msPerChunk: number }).msPerChunk;
}

function childCase(spec: CaseSpec): Promise<CaseResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", import.meta.filename, "--case", JSON.stringify(spec)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) reject(new Error(`case ${spec.model} ${spec.seconds}s exited with ${code}`));
      else resolvePromise(JSON.parse(out.trim().split("\n").at(-1)!) as CaseResult);
    });
  });
}

const s = (ms: number) => (ms / 1000).toFixed(2);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      case: { type: "string" },
      models: { type: "string", default: "vocals,stems" },
      durations: { type: "string", default: "30,180,600" },
      "models-dir": { type: "string", default: join(REPO, "models") },
      threads: { type: "string" },
      batch: { type: "string" },
      format: { type: "string", default: "wav" },
      "spin-wait": { type: "boolean", default: false },
      "stft-helper": { type: "string", default: "on" },
      "torch-checkpoint": { type: "string" },
      "torch-config": { type: "string" },
      "torch-threads": { type: "string" },
      upstream: { type: "string" },
      "upstream-checkpoint": { type: "string" },
      "upstream-config": { type: "string" },
      "upstream-pythonpath": { type: "string" },
      "upstream-python": { type: "string", default: "/usr/bin/python3" },
      order: { type: "string", default: "upstream-first" },
      keep: { type: "string" },
    },
  });
  if (values.case) return runCase(JSON.parse(values.case) as CaseSpec);
  if (values.upstream) {
    if (!values["upstream-checkpoint"])
      throw new Error("--upstream needs --upstream-checkpoint FILE (the checkpoint the model was imported from)");
    if (values.models.includes(",")) throw new Error("--upstream compares one model (--models NAME)");
    if (values.order !== "upstream-first" && values.order !== "mixdown-first")
      throw new Error("--order is upstream-first or mixdown-first");
    const { benchUpstream } = await import("./bench-upstream.ts");
    return benchUpstream({
      upstreamDir: resolve(values.upstream),
      ...(values["upstream-pythonpath"] ? { pythonPath: values["upstream-pythonpath"] } : {}),
      python: values["upstream-python"],
      model: values.models,
      modelsDir: resolve(values["models-dir"]),
      checkpoint: resolve(values["upstream-checkpoint"]),
      ...(values["upstream-config"] ? { config: resolve(values["upstream-config"]) } : {}),
      durations: values.durations.split(",").map(Number),
      threads: Number(values.threads ?? 2),
      order: values.order,
      ...(values.keep ? { keep: values.keep } : {}),
    });
  }

  const modelsDir = resolve(values["models-dir"]);
  const models = values.models.split(",").filter((m) => existsSync(join(modelsDir, `${m}.json`)));
  if (models.length === 0) throw new Error(`no models (${values.models}) in ${modelsDir}`);
  const durations = values.durations.split(",").map(Number);
  console.log(
    `# separation bench, ${new Date().toISOString()}, ${cpus().length} x ${cpus()[0]?.model ?? "cpu"}, load average ${loadavg()[0].toFixed(1)} at start`,
  );
  console.log(
    `# models ${models.join(", ")} from ${modelsDir}; output ${values.format}; threads ${values.threads ?? "ORT default"}; batch ${values.batch ?? "default"}; spin-wait ${values["spin-wait"]}; STFT helper thread ${values["stft-helper"]}`,
  );
  console.log("");
  console.log(
    "| model | input | wall s | inference alone s | wall / inference alone | x realtime | inference in pipeline s | decode wait s | inference wait s | post s | encode s | RSS loaded MB | peak RSS MB |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  const results: CaseResult[] = [];
  for (const seconds of durations) {
    const input = await syntheticSong(seconds);
    for (const model of models) {
      const r = await childCase({
        model,
        modelsDir,
        input,
        seconds,
        format: values.format as "wav" | "flac",
        spinWait: values["spin-wait"],
        helperThread: values["stft-helper"] !== "off",
        ...(values.threads ? { threads: Number(values.threads) } : {}),
        ...(values.batch ? { batch: Number(values.batch) } : {}),
      });
      results.push(r);
      const label = seconds >= 60 ? `${seconds / 60} min` : `${seconds} s`;
      console.log(
        `| ${model} | ${label} | ${s(r.totalMs)} | ${s(r.inferenceAloneMs)} | ${(r.totalMs / r.inferenceAloneMs).toFixed(2)} | ` +
          `${(seconds / (r.totalMs / 1000)).toFixed(1)} | ${s(r.inferenceMs)} | ${s(r.decodeMs)} | ${s(r.inferenceWaitMs)} | ${s(r.postMs)} | ${s(r.encodeMs)} | ${r.loadedRssMb.toFixed(0)} | ${r.peakRssMb.toFixed(0)} |`,
      );
    }
  }
  console.log("");
  for (const model of models) {
    const three = results.find((r) => r.model === model && r.seconds === 180);
    const ten = results.find((r) => r.model === model && r.seconds === 600);
    if (three && ten)
      console.log(`${model}: peak RSS 10 min / 3 min = ${(ten.peakRssMb / three.peakRssMb).toFixed(2)} (target <= 1.5)`);
  }
  if (values["torch-checkpoint"]) {
    if (models.length !== 1) throw new Error("--torch-checkpoint goes with one model (--models NAME)");
    const r = results.find((x) => x.model === models[0] && x.msPerChunkAlone !== undefined);
    if (!r) throw new Error(`${models[0]}: the PyTorch comparison is for the families with a PyTorch exporter`);
    const threads = Number(values["torch-threads"] ?? values.threads ?? 2);
    const torchMs = await torchMsPerChunk(
      r.family,
      resolve(values["torch-checkpoint"]),
      values["torch-config"] && resolve(values["torch-config"]),
      threads,
    );
    console.log(
      `${models[0]} (${r.family}), one chunk at batch 1: onnxruntime ${r.msPerChunkAlone!.toFixed(0)} ms (${values.threads ?? "ORT default"} threads), ` +
        `PyTorch ${torchMs.toFixed(0)} ms (${threads} threads): onnxruntime ${(torchMs / r.msPerChunkAlone!).toFixed(2)}x faster (target >= 1.3)`,
    );
  }
  await writeFile(join(CACHE, "last-bench.json"), JSON.stringify(results, null, 2));
}

await main();
