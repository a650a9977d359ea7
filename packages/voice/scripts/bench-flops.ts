/**
 * `bench:voice --flops`: how close RVC's three networks run to this machine's limit, on one piece
 * as the engine cuts them (10 s with 0.5 s of context on each side: 176,000 samples at 16 kHz,
 * 1,100 frames): the floating-point operations of one run of each ONNX file (MatMul, Gemm, Conv,
 * ConvTranspose, Einsum; @mixdown/bench's onnx_flops.py), onnxruntime's time for it with the
 * engine's session options, the achieved GFLOP/s and that as a share of onnxruntime's own N x N
 * MatMul on the same threads: the same table as `bench:flops` for the separation models.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { ort } from "@mixdown/separation/ort";
import { cpuArenaEnabled } from "@mixdown/separation/allocator";
import { countFlops, flopsCells, matmulGflops, medianRunMs, writePeakMatmul } from "@mixdown/bench/flops";

/** One piece: 10 s and 0.5 s of context each side at 16 kHz, 160 samples a frame. */
const PIECE_SAMPLES = 176_000;
const PIECE_FRAMES = PIECE_SAMPLES / 160;
/** RMVPE's mel frames for that piece (1 + samples / 160), padded to a multiple of 32. */
const RMVPE_FRAMES = Math.ceil((1 + PIECE_FRAMES) / 32) * 32;

function noise(n: number, scale = 0.1): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (Math.random() - 0.5) * 2 * scale;
  return out;
}

interface Network {
  name: string;
  file: string;
  sizes: Record<string, number>;
  feeds: () => Record<string, ort.Tensor>;
  /** RMVPE runs at `extended`, as RmvpePitch loads it */
  level: "all" | "extended";
}

function networks(dir: string, sampleRate: number): Network[] {
  const hop = sampleRate / 100;
  return [
    {
      name: "ContentVec (HuBERT-base)",
      file: join(dir, "contentvec.onnx"),
      sizes: { samples: PIECE_SAMPLES },
      feeds: () => ({ source: new ort.Tensor("float32", noise(PIECE_SAMPLES), [1, 1, PIECE_SAMPLES]) }),
      level: "all",
    },
    {
      name: "RMVPE",
      file: join(dir, "rmvpe.onnx"),
      sizes: { frames: RMVPE_FRAMES },
      feeds: () => ({ mel: new ort.Tensor("float32", noise(128 * RMVPE_FRAMES, 3), [1, 128, RMVPE_FRAMES]) }),
      level: "extended",
    },
    {
      name: `RVC v2 synthesizer (${sampleRate / 1000} kHz)`,
      file: join(dir, "rvc.onnx"),
      sizes: { frames: PIECE_FRAMES, samples: PIECE_FRAMES * hop },
      feeds: () => ({
        phone: new ort.Tensor("float32", noise(PIECE_FRAMES * 768, 1), [1, PIECE_FRAMES, 768]),
        pitch: new ort.Tensor(
          "int64",
          BigInt64Array.from({ length: PIECE_FRAMES }, (_, i) => BigInt(1 + (i % 200))),
          [1, PIECE_FRAMES],
        ),
        rnd: new ort.Tensor("float32", noise(192 * PIECE_FRAMES, 1), [1, 192, PIECE_FRAMES]),
        sid: new ort.Tensor("int64", BigInt64Array.of(0n), [1]),
        source: new ort.Tensor("float32", noise(PIECE_FRAMES * hop), [1, 1, PIECE_FRAMES * hop]),
      }),
      level: "all",
    },
  ];
}

export async function benchVoiceFlops(options: {
  dir: string;
  sampleRate: number;
  threads: number;
  runs: number;
  peakN: number;
}): Promise<void> {
  const sessionOptions = (level: "all" | "extended"): ort.InferenceSession.SessionOptions => ({
    graphOptimizationLevel: level,
    enableCpuMemArena: cpuArenaEnabled(),
    enableMemPattern: false,
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
  });
  const msPerRun = async (path: string, feeds: Record<string, ort.Tensor>, level: "all" | "extended") => {
    const session = await ort.InferenceSession.create(path, sessionOptions(level));
    try {
      return await medianRunMs(() => session.run(feeds), options.runs);
    } finally {
      await session.release();
    }
  };
  const work = await mkdtemp(join(tmpdir(), "mixdown-bench-voice-flops-"));
  try {
    const n = options.peakN;
    const peakModel = join(work, "matmul.onnx");
    await writePeakMatmul(n, peakModel);
    const peakMs = await msPerRun(
      peakModel,
      { a: new ort.Tensor("float32", noise(n * n), [n, n]), b: new ort.Tensor("float32", noise(n * n), [n, n]) },
      "all",
    );
    const peak = matmulGflops(n, peakMs);
    console.log(
      `# FLOP/s of RVC's networks on one 10 s piece (with its 1 s of context) against onnxruntime's ${n} x ${n} MatMul, ` +
        `${options.threads} intra-op threads, ${new Date().toISOString()}, ${cpus().length} x ${cpus()[0]?.model ?? "cpu"}, load average ${loadavg()[0].toFixed(1)}`,
    );
    console.log(`# peak: ${peak.toFixed(1)} GFLOP/s (${peakMs.toFixed(1)} ms a MatMul, median of ${options.runs})`);
    console.log("");
    console.log("| network | ONNX file | GFLOP per piece | ms per piece | GFLOP/s | of the peak | FLOPs by operator |");
    console.log("|---|---|---|---|---|---|---|");
    for (const net of networks(options.dir, options.sampleRate)) {
      const feeds = net.feeds();
      const shapesOf = async (exposed: string) => {
        const session = await ort.InferenceSession.create(exposed, sessionOptions(net.level));
        try {
          const outputs = await session.run(feeds);
          return Object.fromEntries(Object.entries(outputs).map(([name, out]) => [name, [...out.dims]]));
        } finally {
          await session.release();
        }
      };
      const count = await countFlops(net.file, work, shapesOf, net.sizes);
      console.log(`| ${net.name} | ${net.file} | ${flopsCells(count, await msPerRun(net.file, feeds, net.level), peak)}`);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
