import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { prepareFfmpeg } from "@mixdown/audio";
import {
  DEFAULT_ENSEMBLE,
  ENSEMBLE_ALGORITHMS,
  isEnsembleAlgorithm,
  ModelRegistry,
  parseModelList,
  runsOnJemalloc,
  separateEnsemble,
  separateFile,
  type ExecutionProvider,
  type OutputSpec,
  type SeparateFileResult,
} from "@mixdown/separation";
import { modelListProblem } from "@mixdown/jobs";
import { repoRoot } from "../local-state.ts";

const USAGE = `usage: mixdown separate <file> --model <name> --out <dir> [options]

Separates <file> with a model from the models directory and writes one
lossless file per stem, named after the stem (vocals.wav, backing.wav, ...).

  --model NAME        model manifest name, e.g. vocals or stems (required); several,
                      comma-separated (vocals,stems), run as an ensemble that
                      writes the stems they all output, combined
  --ensemble ALG      how an ensemble combines its models: avg_wave (default),
                      median_wave, min_mag, max_mag, avg_mag, uvr_max_spec,
                      uvr_min_spec
  --out DIR           output directory, created if missing (required)
  --format wav|flac   output format (default wav, 32-bit float; flac is 24-bit)
  --models-dir DIR    where <name>.json and <name>.onnx live (default: the repo"s models/)
  --threads N         onnxruntime intra-op threads (default: one per core)
  --provider cpu|webgpu|cuda execution provider (default cpu)
  --batch N           chunks per inference call
  --overlap X         chunk overlap in [0, 1) (default 0.25)
  --shifts N          HTDemucs: average N runs on the input delayed by a random
                      0-0.5 s, as demucs's --shifts (its default is 1); makes the
                      output random (default: the model's manifest, else 0)

./mixdown.sh separate starts it on jemalloc where libjemalloc2 is installed
(MODEL_ALLOCATOR=system keeps glibc's malloc); the last line says which.
`;

const DEFAULT_MODELS_DIR = resolve(repoRoot, "models");

class UsageError extends Error {}

function positiveInteger(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a positive integer, got "${value}"`);
  return n;
}

export interface CommandOutput {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
}

/**
 * `mixdown separate`: the separation engine on a local file, no service needed. Returns the
 * process exit code (0 done, 1 failed, 2 bad arguments) instead of exiting, so the caller owns
 * the process. main.ts imports this module only for `separate`, so the other commands never
 * load onnxruntime.
 */
export async function separateCommand(argv: string[], io: CommandOutput = process): Promise<number> {
  let registry: ModelRegistry | undefined;
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        model: { type: "string" },
        out: { type: "string" },
        format: { type: "string", default: "wav" },
        "models-dir": { type: "string" },
        threads: { type: "string" },
        provider: { type: "string", default: "cpu" },
        batch: { type: "string" },
        overlap: { type: "string" },
        shifts: { type: "string" },
        ensemble: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
    if (values.help) {
      io.stdout.write(USAGE);
      return 0;
    }
    if (positionals.length !== 1) throw new UsageError("expected exactly one input file");
    if (!values.model) throw new UsageError("--model is required");
    if (!values.out) throw new UsageError("--out is required");
    const names = parseModelList(values.model);
    const problem = modelListProblem(values.model, names);
    if (problem) throw new UsageError(`--model ${problem}`);
    if (values.ensemble !== undefined && names.length < 2)
      throw new UsageError("--ensemble needs --model naming two or more models");
    const algorithm = values.ensemble ?? DEFAULT_ENSEMBLE;
    if (!isEnsembleAlgorithm(algorithm))
      throw new UsageError(`--ensemble must be one of ${ENSEMBLE_ALGORITHMS.join(", ")}, got "${algorithm}"`);
    if (values.format !== "wav" && values.format !== "flac")
      throw new UsageError(`--format must be wav or flac, got "${values.format}"`);
    if (!["cpu", "webgpu", "cuda"].includes(values.provider))
      throw new UsageError(`--provider must be cpu, webgpu or cuda, got "${values.provider}"`);
    const threads = positiveInteger(values.threads, "--threads");
    const batchSize = positiveInteger(values.batch, "--batch");
    const overlap = values.overlap === undefined ? undefined : Number(values.overlap);
    if (overlap !== undefined && !(overlap >= 0 && overlap < 1))
      throw new UsageError(`--overlap must be in [0, 1), got "${values.overlap}"`);
    const shifts = values.shifts === undefined ? undefined : Number(values.shifts);
    if (shifts !== undefined && !(Number.isInteger(shifts) && shifts >= 0 && values.shifts!.trim() !== ""))
      throw new UsageError(`--shifts must be an integer ≥ 0, got "${values.shifts}"`);

    const inputPath = resolve(positionals[0]);
    const outDir = resolve(values.out);
    registry = new ModelRegistry({
      modelsDir: resolve(values["models-dir"] ?? DEFAULT_MODELS_DIR),
      executionProvider: values.provider as ExecutionProvider,
      ...(threads !== undefined ? { intraOpThreads: threads } : {}),
      // one run of each model: a warm-up chunk would be a chunk's work done twice
      warmUp: false,
      // a bag's members one after another, each for its own pass: one member's memory, not all of them
      bagMembers: "in turn",
    });
    const loadStart = performance.now();
    const [models] = await Promise.all([Promise.all(names.map((n) => registry!.load(n))), prepareFfmpeg()]);
    const loadMs = performance.now() - loadStart;
    const outputs: OutputSpec[] = [{ format: values.format }];
    const showProgress = io.stderr.isTTY === true;
    const common = {
      inputPath,
      outDir,
      outputs,
      ...(batchSize !== undefined ? { batchSize } : {}),
      ...(overlap !== undefined ? { overlap } : {}),
      onProgress: (p: { fraction?: number }) => {
        if (showProgress && p.fraction !== undefined) io.stderr.write(`\r${(100 * p.fraction).toFixed(0)}%`);
      },
    };
    if (shifts !== undefined && models.length > 1) throw new UsageError("--shifts is for a single HTDemucs model");
    const result: SeparateFileResult =
      models.length === 1
        ? await separateFile({ ...common, model: models[0]!, ...(shifts !== undefined ? { shifts } : {}) })
        : await separateEnsemble({ ...common, models, algorithm });
    if (showProgress) io.stderr.write("\r");

    const seconds = result.frames / result.sampleRate;
    const t = result.timings;
    for (const [stem, files] of Object.entries(result.stems)) io.stdout.write(`${stem}\t${files[values.format]}\n`);
    io.stdout.write(
      `${seconds.toFixed(1)} s of audio in ${(t.totalMs / 1000).toFixed(2)} s (${(seconds / (t.totalMs / 1000)).toFixed(1)}x realtime, ${result.chunks} chunks); ` +
        `model load ${loadMs.toFixed(0)} ms, decode ${t.decodeMs.toFixed(0)} ms, inference ${t.inferenceMs.toFixed(0)} ms ` +
        `(waited for ${t.inferenceWaitMs.toFixed(0)} ms), post ${t.postMs.toFixed(0)} ms, encode ${t.encodeMs.toFixed(0)} ms; ` +
        `allocator ${runsOnJemalloc() ? "jemalloc" : "system"}\n`,
    );
    if ("members" in result) {
      const ensemble = result as Awaited<ReturnType<typeof separateEnsemble>>;
      const each = ensemble.members.map((m) => `${m.model} ${(m.timings.totalMs / 1000).toFixed(2)} s`).join(", ");
      io.stdout.write(`ensemble (${algorithm}): ${each}, combining ${(ensemble.combineMs / 1000).toFixed(2)} s\n`);
    }
    return 0;
  } catch (err) {
    if (err instanceof UsageError || (err as NodeJS.ErrnoException).code?.startsWith("ERR_PARSE_ARGS")) {
      io.stderr.write(`mixdown separate: ${(err as Error).message}\n\n${USAGE}`);
      return 2;
    }
    io.stderr.write(`mixdown separate: ${(err as Error).message}\n`);
    return 1;
  } finally {
    await registry?.close();
  }
}
