/**
 * Execution providers compared on one machine: the same models, the same
 * generated mix, run through separateStream (the whole engine but ffmpeg:
 * chunking, STFT on the helper thread, the model, iSTFT, overlap-add) on each
 * provider and batch size. Prints the realtime factor, the time onnxruntime
 * ran, the load time (session creation and warm-up: WebGPU compiles its
 * shaders there), the peak GPU memory in use (nvidia-smi, where there is one)
 * and the SNR of every output against the first provider's at batch 1, so a
 * GPU's numbers are checked against the CPU's in the same run.
 *
 * Runs on Node 24 alone (type stripping, no tsx), so a GPU machine needs only
 * the node binary and this package's node_modules:
 *
 *   node packages/separation/scripts/bench-provider.ts [--providers cpu,webgpu] [--models vocals,stems]
 *        [--seconds 180] [--batches 1,4,16] [--models-dir models] [--threads N] [--json FILE]
 */
import { spawn, spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { availableParallelism, cpus } from "node:os";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { ModelRegistry } from "../src/model-registry.ts";
import type { ExecutionProvider } from "../src/inference-options.ts";
import { emptyTimings, separateStream } from "../src/separate-stream.ts";

const PROVIDERS: readonly ExecutionProvider[] = ["cpu", "webgpu", "cuda"];

interface CaseResult {
  model: string;
  provider: ExecutionProvider;
  batch: number;
  seconds: number;
  loadMs: number;
  wallMs: number;
  inferenceMs: number;
  chunks: number;
  realtime: number;
  /** lowest SNR over the stems against the reference case; undefined for the reference itself */
  snrDb?: number;
  /** peak GPU memory in use during the case, less what was in use before the model loaded */
  gpuMemMiB?: number;
  error?: string;
}

/**
 * A song-like mix at 44.1 kHz stereo, generated here so the script needs no
 * files and no ffmpeg: a gliding harmonic voice with vibrato and syllables in
 * the centre, a bass line, chords panned left and noise hi-hats panned right.
 * Seeded, so every provider and every run gets the same samples.
 */
function generateMix(seconds: number, rate = 44100): Float32Array {
  const frames = Math.round(seconds * rate);
  const out = new Float32Array(frames * 2);
  let seed = 0x9e3779b9;
  const noise = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32 - 0.5;
  };
  const melody = [0, 2, 4, 5, 7, 5, 4, 2, 0, -3, -1, 0];
  const bassLine = [0, 0, 5, 5, 3, 3, 7, 7];
  let voicePhase = 0;
  let bassPhase = 0;
  for (let i = 0; i < frames; i++) {
    const t = i / rate;
    const note = melody[Math.floor(t / 0.5) % melody.length];
    const f0 = 220 * 2 ** (note / 12) * (1 + 0.01 * Math.sin(2 * Math.PI * 5.5 * t));
    voicePhase += (2 * Math.PI * f0) / rate;
    const syllable = Math.max(0, Math.sin(Math.PI * ((t / 0.25) % 1))) ** 0.5 * (Math.floor(t / 8) % 4 === 3 ? 0 : 1);
    let voice = 0;
    for (let h = 1; h <= 12; h++) voice += (Math.sin(h * voicePhase) / h) * (1 + Math.cos(h * 0.7 + t));
    voice *= 0.12 * syllable;
    bassPhase += (2 * Math.PI * 55 * 2 ** (bassLine[Math.floor(t / 1) % bassLine.length] / 12)) / rate;
    const bass = 0.25 * Math.sin(bassPhase) * (0.6 + 0.4 * Math.sin(2 * Math.PI * 2 * t));
    const chords =
      0.05 * (Math.sin(2 * Math.PI * 261.6 * t) + Math.sin(2 * Math.PI * 329.6 * t) + Math.sin(2 * Math.PI * 392 * t));
    const hat = (t % 0.25 < 0.03 ? 0.3 : 0) * noise();
    out[2 * i] = voice + bass + chords + 0.4 * hat;
    out[2 * i + 1] = voice + bass + 0.6 * chords + hat;
  }
  return out;
}

/** The mix in one-second blocks, as a decoder would hand it over. */
async function* blocks(mix: Float32Array, rate = 44100): AsyncGenerator<Float32Array> {
  for (let i = 0; i < mix.length; i += 2 * rate) yield mix.subarray(i, Math.min(mix.length, i + 2 * rate));
}

/** Samples nvidia-smi's memory.used every 100 ms; absent where there is no nvidia-smi. */
function gpuMemorySampler(): { peakSince(): number; reset(): void; stop(): void } | undefined {
  if (spawnSync("nvidia-smi", ["-L"]).status !== 0) return undefined;
  const child = spawn("nvidia-smi", ["--query-gpu=memory.used", "--format=csv,noheader,nounits", "-lms", "100"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  let peak = 0;
  let buffered = "";
  child.stdout.on("data", (d: Buffer) => {
    buffered += d.toString();
    const lines = buffered.split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines) peak = Math.max(peak, Number(line.trim()) || 0);
  });
  return {
    peakSince: () => peak,
    reset: () => {
      peak = 0;
    },
    stop: () => child.kill(),
  };
}

function gpuMemoryNow(): number | undefined {
  const r = spawnSync("nvidia-smi", ["--query-gpu=memory.used", "--format=csv,noheader,nounits"]);
  return r.status === 0 ? Number(r.stdout.toString().trim()) : undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      providers: { type: "string", default: "cpu,webgpu" },
      models: { type: "string", default: "vocals,stems" },
      seconds: { type: "string", default: "180" },
      batches: { type: "string", default: "1,4,16" },
      "models-dir": { type: "string", default: resolve(import.meta.dirname, "../../../models") },
      threads: { type: "string" },
      json: { type: "string" },
    },
  });
  const providers = values.providers.split(",") as ExecutionProvider[];
  for (const p of providers) if (!PROVIDERS.includes(p)) throw new Error(`unknown provider ${p} (${PROVIDERS.join(", ")})`);
  const seconds = Number(values.seconds);
  const batches = values.batches.split(",").map(Number);
  const threads = values.threads ? Number(values.threads) : undefined;
  const mix = generateMix(seconds);
  const gpu = gpuMemorySampler();
  const results: CaseResult[] = [];
  const gpuName = spawnSync("nvidia-smi", ["--query-gpu=name,driver_version", "--format=csv,noheader"]).stdout?.toString().trim();
  console.log(
    `# provider bench, ${new Date().toISOString()}, ${availableParallelism()} x ${cpus()[0]?.model ?? "?"}${gpuName ? `, GPU ${gpuName}` : ""}`,
  );
  console.log(
    `# ${seconds} s generated mix, overlap 0.25, STFT helper thread on, intra-op threads ${threads ?? "onnxruntime default"}`,
  );

  for (const modelName of values.models.split(",")) {
    let reference: Record<string, Float32Array> | undefined;
    for (const provider of providers) {
      await sleep(300);
      const baseline = gpuMemoryNow();
      gpu?.reset();
      const registry = new ModelRegistry({
        modelsDir: values["models-dir"],
        executionProvider: provider,
        ...(threads ? { intraOpThreads: threads } : {}),
      });
      const loadStart = performance.now();
      let loadMs = 0;
      try {
        const model = await registry.load(modelName);
        loadMs = performance.now() - loadStart;
        for (const batch of batches) {
          const timings = emptyTimings();
          const stems: Record<string, Float32Array> = {};
          let written = 0;
          const start = performance.now();
          for await (const block of separateStream(blocks(mix), model, { batchSize: batch, timings })) {
            for (const [name, data] of Object.entries(block.stems)) {
              (stems[name] ??= new Float32Array(mix.length)).set(data, written * 2);
            }
            written += block.frames;
          }
          const wallMs = performance.now() - start;
          const result: CaseResult = {
            model: modelName,
            provider,
            batch,
            seconds,
            loadMs,
            wallMs,
            inferenceMs: timings.inferenceMs,
            chunks: timings.chunks,
            realtime: (seconds * 1000) / wallMs,
          };
          if (!reference) reference = stems;
          else result.snrDb = Math.min(...Object.keys(reference).map((name) => snrDb(reference![name], stems[name])));
          if (gpu && baseline !== undefined) result.gpuMemMiB = gpu.peakSince() - baseline;
          results.push(result);
          console.log(JSON.stringify(result));
        }
      } catch (err) {
        const result: CaseResult = {
          model: modelName,
          provider,
          batch: 0,
          seconds,
          loadMs,
          wallMs: 0,
          inferenceMs: 0,
          chunks: 0,
          realtime: 0,
          error: (err as Error).message,
        };
        results.push(result);
        console.log(JSON.stringify(result));
      } finally {
        await registry.close();
      }
    }
  }
  gpu?.stop();
  if (values.json) await writeFile(values.json, JSON.stringify(results, null, 2));

  console.log(
    "\n| model | provider | batch | load + warm-up s | wall s | onnxruntime s | x realtime | SNR vs first dB | GPU memory MiB |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const r of results) {
    if (r.error) {
      console.log(`| ${r.model} | ${r.provider} | - | failed: ${r.error.replace(/\s+/g, " ").slice(0, 300)} |||||||`);
      continue;
    }
    const snr = r.snrDb === undefined ? "reference" : r.snrDb === Infinity ? "identical" : r.snrDb.toFixed(1);
    console.log(
      `| ${r.model} | ${r.provider} | ${r.batch} | ${(r.loadMs / 1000).toFixed(2)} | ${(r.wallMs / 1000).toFixed(2)} | ${(r.inferenceMs / 1000).toFixed(2)} | ${r.realtime.toFixed(1)} | ${snr} | ${r.gpuMemMiB ?? "-"} |`,
    );
  }
}

/** 10·log10(Σref² / Σ(ref − x)²) over both channels; Infinity when they are equal. */
function snrDb(ref: Float32Array, x: Float32Array | undefined): number {
  if (!x || x.length !== ref.length) return -Infinity;
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < ref.length; i++) {
    signal += ref[i] * ref[i];
    noise += (ref[i] - x[i]) ** 2;
  }
  return noise === 0 ? Infinity : 10 * Math.log10(signal / noise);
}

await main();
