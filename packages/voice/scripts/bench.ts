// `pnpm bench:voice [--seconds 30,300] [--threads 2] [--dir DIR] [--yin] [--no-index] [--segment-seconds S]`: an RVC v2 48 kHz
// conversion at real model sizes (random weights, made once by scripts/bench/prepare_voice_bench.py
// into DIR, default $TMPDIR/mixdown-bench-voice): realtime factor, the ContentVec / pitch / index /
// synthesizer split, and peak RSS. Pieces are 10 s (--segment-seconds) whatever the input's length; with several
// lengths each runs in a process of its own (so each peak is that length's) and a table of the
// peaks follows, the last against the first: memory should not grow with the input.
//
// `pnpm bench:voice --upstream DIR [--upstream-pythonpath P] [--upstream-python PY] [--order upstream-first|mixdown-first]
// [--seconds 10,30]`: RVC WebUI's own infer_cli.py (DIR, a writable checkout) beside this conversion on the same
// models, input, settings and threads, each a process timed from start to end (bench-upstream.ts).
// `pnpm bench:voice --flops [--runs 5] [--peak-n 2048]`: each network's FLOPs on one 10 s piece, its time, and that as a share
// of onnxruntime's own MatMul on the same threads (bench-flops.ts).
// `--input FILE` converts FILE instead of the spoken phrase (one length), `--out DIR` keeps the output there.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { convertVoiceFile, RvcVoiceEngine } from "../src/index.ts";
import { benchVoiceFlops } from "./bench-flops.ts";
import { BENCH_CONVERSION, benchVoiceUpstream, speechInput } from "./bench-upstream.ts";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "30,300" },
    threads: { type: "string", default: "2" },
    dir: { type: "string", default: join(tmpdir(), "mixdown-bench-voice") },
    yin: { type: "boolean", default: false },
    "no-index": { type: "boolean", default: false },
    // the longest piece the engine sends to the models at once (RvcVoiceEngine's segmentSeconds)
    "segment-seconds": { type: "string" },
    input: { type: "string" },
    out: { type: "string" },
    upstream: { type: "string" },
    "upstream-pythonpath": { type: "string" },
    "upstream-python": { type: "string", default: "/usr/bin/python3" },
    order: { type: "string", default: "upstream-first" },
    flops: { type: "boolean", default: false },
    runs: { type: "string", default: "5" },
    "peak-n": { type: "string", default: "2048" },
  },
});
const lengths = values.seconds!.split(",").map(Number);
if (lengths.some((s) => !(s > 0)))
  throw new Error(`--seconds takes lengths in seconds separated by commas (got ${values.seconds})`);
const threads = Number(values.threads);
const dir = values.dir!;
const file = (name: string) => join(dir, name);

if (!["rvc.onnx", "contentvec.onnx", "rmvpe.onnx", "model.index", "hubert_base.pt"].every((n) => existsSync(file(n)))) {
  console.log(`preparing real-size random-weight models in ${dir} (Debian's PyTorch, torchaudio, faiss; a few minutes, once)`);
  execFileSync("/usr/bin/python3", [fileURLToPath(new URL("./bench/prepare_voice_bench.py", import.meta.url)), dir], {
    stdio: "inherit",
    env: { ...process.env, PYTHONPATH: fileURLToPath(new URL("../python", import.meta.url)) },
  });
}

if (values.flops) {
  await benchVoiceFlops({ dir, sampleRate: 48000, threads, runs: Number(values.runs), peakN: Number(values["peak-n"]) });
  process.exit(0);
}

if (values.upstream) {
  if (values.yin) throw new Error("--upstream runs RVC with RMVPE; --yin has no counterpart there");
  // Without an index Mixdown's conversionStrength blends the converted voice with the input, which RVC does not do.
  if (values["no-index"])
    throw new Error("--upstream compares the conversion with the index; --no-index has no counterpart in RVC");
  if (values.order !== "upstream-first" && values.order !== "mixdown-first")
    throw new Error(`--order takes upstream-first or mixdown-first (got ${values.order})`);
  await benchVoiceUpstream({
    upstreamDir: values.upstream,
    ...(values["upstream-pythonpath"] ? { pythonPath: values["upstream-pythonpath"] } : {}),
    python: values["upstream-python"]!,
    modelsDir: dir,
    lengths,
    threads,
    order: values.order,
    mixdownArgs: values["segment-seconds"] ? ["--segment-seconds", values["segment-seconds"]] : [],
  });
  process.exit(0);
}

if (lengths.length > 1) {
  if (values.input) throw new Error("--input takes one length (--seconds N)");
  // Every argument but the lengths goes to each child.
  const args = process.argv.slice(2).filter((a, i, all) => a !== "--seconds" && all[i - 1] !== "--seconds");
  const rows: string[] = [];
  let firstPeak = 0;
  for (const length of lengths) {
    const child = spawnSync(
      process.execPath,
      [...process.execArgv, fileURLToPath(import.meta.url), ...args, "--seconds", String(length)],
      { stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" },
    );
    process.stdout.write(child.stdout);
    if (child.status !== 0) process.exit(child.status ?? 1);
    const peak = Number(/peak RSS (\d+) MB/.exec(child.stdout)![1]);
    const factor = /realtime factor ([\d.]+)/.exec(child.stdout)![1];
    firstPeak ||= peak;
    rows.push(`| ${length} s | ${factor} | ${peak} MB | ${(peak / firstPeak).toFixed(2)}x |`);
  }
  console.log(["", `| input | realtime factor | peak RSS | against ${lengths[0]} s |`, "|---|---|---|---|", ...rows].join("\n"));
  process.exit(0);
}
const seconds = lengths[0]!;

const work = await mkdtemp(join(tmpdir(), "mixdown-bench-voice-run-"));
const input = values.input ?? speechInput(seconds, work);

const loadStarted = performance.now();
const engine = await RvcVoiceEngine.load({
  modelPath: file("rvc.onnx"),
  contentVecPath: file("contentvec.onnx"),
  sampleRate: 48000,
  protect: BENCH_CONVERSION.protect,
  ...(values.yin ? {} : { rmvpePath: file("rmvpe.onnx") }),
  ...(values["no-index"] ? {} : { indexPath: file("model.index") }),
  ...(values["segment-seconds"] ? { segmentSeconds: Number(values["segment-seconds"]) } : {}),
  sessionOptions: { intraOpNumThreads: threads, interOpNumThreads: 1 },
});
const loadSeconds = (performance.now() - loadStarted) / 1000;
const started = performance.now();
const cpuBefore = process.cpuUsage();
const result = await convertVoiceFile({
  inputPath: input,
  engine,
  params: {
    conversionStrength: BENCH_CONVERSION.indexRate,
    modelVolumeMix: BENCH_CONVERSION.rmsMix,
    pitchShift: BENCH_CONVERSION.pitchShift,
    pre: {},
    post: {},
  },
  outDir: values.out ?? join(work, "out"),
});
const total = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
const t = engine.timings;
const stage = (ms: number) => `${(ms / 1000 / seconds).toFixed(3)} s/s`;
console.log(
  [
    `RVC v2 48 kHz, real sizes, random weights; ${seconds} s input, onnxruntime ${threads} threads; load ${loadSeconds.toFixed(1)} s`,
    `realtime factor ${(total / seconds).toFixed(3)} (${total.toFixed(1)} s; prepare ${result.seconds.prepare.toFixed(1)}, convert ${result.seconds.convert.toFixed(1)}, finish ${result.seconds.finish.toFixed(1)})`,
    `split per second of audio: ContentVec ${stage(t.contentVec)}, ${values.yin ? "YIN" : "RMVPE"} ${stage(t.pitch)}, index ${values["no-index"] ? "off" : stage(t.index)}, synthesizer ${stage(t.synthesizer)}`,
    // On a shared machine the wall clock counts other people's work; CPU time does not.
    `CPU ${((cpu.user + cpu.system) / 1e6 / seconds).toFixed(2)} core-seconds per second of audio (this process; ffmpeg not counted)`,
    `peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`,
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(", ")} (1, 5, 15 min; wall times count other processes on a busy machine)`,
  ].join("\n"),
);
console.log(`output ${result.output}`);
await engine.close();
await rm(work, { recursive: true, force: true });
