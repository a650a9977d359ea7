import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { AudioDecodeError, prepareFfmpeg } from "@mixdown/audio";
import {
  DEFAULT_ENSEMBLE,
  ENSEMBLE_ALGORITHMS,
  isEnsembleAlgorithm,
  ModelRegistry,
  parseModelList,
  runsOnJemalloc,
  selectStems,
  separateEnsemble,
  separateFile,
  type ExecutionProvider,
  type OutputSpec,
  type SeparateFileResult,
} from "@mixdown/separation";
import { modelListProblem } from "@mixdown/jobs";
import { repoRoot } from "../local-state.ts";
import { finishedOutputs, PartialOutput, removeLeftovers, type OutputSettings } from "../separate/finished-outputs.ts";
import { collectInputs, InputProblem, type SeparationInput } from "../separate/inputs.ts";
import { runProgress } from "../separate/run-progress.ts";

const USAGE = `usage: mixdown separate <file|folder>... --model <name> --out <dir> [options]

Separates audio files with a model from the models directory and writes one
lossless file per stem, named after the stem (vocals.wav, backing.wav, ...).

Each argument is a file or a folder. A folder is searched recursively for wav,
mp3, flac and webm audio, decided from each file's first bytes as the API
decides an upload's (other files are skipped with a line saying so; hidden ones
and anything under --out silently). Each input's stems go to a folder of its
own: <out>/<its path under the folder, extension dropped>/ (a named file's:
<out>/<its name, extension dropped>/). One file alone writes into <out> itself.
The models are loaded once for the whole run.

A rerun skips each input whose stems are all there, made with the same
settings from the input as it is now; stems are written to a hidden folder and
moved in place only when complete, so an input cut off by Ctrl-C is separated
again. A file that fails (no audio, a decode error) is reported and the run goes
on; the last line counts what was separated, skipped and failed. Exit status:
0 all done, 1 some file failed, 2 bad arguments, 130 interrupted (Ctrl-C).

  --model NAME        model manifest name, e.g. vocals or stems (required); several,
                      comma-separated (vocals,stems), run as an ensemble that
                      writes the stems they all output, combined
  --ensemble ALG      how an ensemble combines its models: avg_wave (default),
                      median_wave, min_mag, max_mag, avg_mag, uvr_max_spec,
                      uvr_min_spec
  --stems A,B         only these of a single model's stems (default: all of them)
  --out DIR           output directory, created if missing (required)
  --format wav|flac   output format (default wav, 32-bit float; flac is 24-bit)
  --models-dir DIR    where <name>.json and <name>.onnx live (default: the repo's models/)
  --threads N         onnxruntime intra-op threads (default: one per core)
  --provider cpu|webgpu|cuda execution provider (default cpu)
  --batch N           chunks per inference call
  --overlap X         chunk overlap in [0, 1) (default 0.25)
  --shifts N          HTDemucs: average N runs on the input delayed by a random
                      0-0.5 s, as demucs's --shifts (its default is 1); makes the
                      output random (default: the model's manifest, else 0)

Progress goes to stderr: bars on a terminal, plain lines otherwise. stdout
gets each separated file's stems (stem, tab, path) and its timings.

./mixdown.sh separate starts it on jemalloc where libjemalloc2 is installed
(MODEL_ALLOCATOR=system keeps glibc's malloc); the timings say which.
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

class Interrupted extends Error {
  override readonly name = "Interrupted";
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * `mixdown separate`: the separation engine on local files and folders, no service needed.
 * Returns the process exit code (0 done, 1 some file failed, 2 bad arguments, 130 Ctrl-C)
 * instead of exiting, so the caller owns the process. main.ts imports this module only for
 * `separate`, so the other commands never load onnxruntime.
 */
export async function separateCommand(argv: string[], io: CommandOutput = process): Promise<number> {
  let registry: ModelRegistry | undefined;
  const interrupt = new AbortController();
  const onSigint = () => {
    // a second Ctrl-C does not wait for the clean-up: the next run removes what is left
    if (interrupt.signal.aborted) process.exit(130);
    interrupt.abort(new Interrupted("interrupted"));
  };
  process.on("SIGINT", onSigint);
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        model: { type: "string" },
        out: { type: "string" },
        format: { type: "string", default: "wav" },
        stems: { type: "string" },
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
    if (positionals.length === 0) throw new UsageError("expected one or more input files or folders");
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
    const format = values.format;
    if (format !== "wav" && format !== "flac") throw new UsageError(`--format must be wav or flac, got "${format}"`);
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
    if (shifts !== undefined && names.length > 1) throw new UsageError("--shifts is for a single HTDemucs model");
    const stems = values.stems === undefined ? undefined : values.stems.split(",").map((s) => s.trim());
    if (stems !== undefined && (stems.some((s) => s === "") || new Set(stems).size !== stems.length))
      throw new UsageError(`--stems takes distinct stem names, comma-separated, got "${values.stems}"`);
    if (stems !== undefined && names.length > 1) throw new UsageError("--stems is for a single model");

    const outRoot = resolve(values.out);
    const { inputs, notAudio } = await collectInputs(positionals, outRoot).catch((error: unknown) => {
      throw error instanceof InputProblem ? new UsageError(error.message) : error;
    });
    const settings: OutputSettings = {
      models: names,
      ensemble: names.length > 1 ? algorithm : null,
      format,
      stems: stems ?? null,
      overlap: overlap ?? null,
      shifts: shifts ?? null,
    };
    const started = performance.now();
    const progress = runProgress(io.stderr);
    const removed = await removeLeftovers(outRoot);
    if (removed > 0) progress.line(`removed ${removed} unfinished output folder(s) an interrupted run left in ${outRoot}`);
    for (const file of notAudio) progress.line(`skipped ${file.label}: ${file.what}`);

    const todo: SeparationInput[] = [];
    let alreadyDone = 0;
    for (const input of inputs) {
      if (await finishedOutputs(input.path, input.outDir, settings)) {
        progress.line(`skipped ${input.label}: already separated in ${input.outDir}`);
        alreadyDone++;
      } else todo.push(input);
    }

    const failed: Array<{ label: string; message: string }> = [];
    let separated = 0;
    let interrupted = false;
    if (todo.length > 0) {
      registry = new ModelRegistry({
        modelsDir: resolve(values["models-dir"] ?? DEFAULT_MODELS_DIR),
        executionProvider: values.provider as ExecutionProvider,
        ...(threads !== undefined ? { intraOpThreads: threads } : {}),
        // a warm-up chunk costs a chunk's work; the first file's first chunk tells as well whether the model runs
        warmUp: false,
        // a bag's members one after another, each for its own pass: one member's memory, not all of them
        bagMembers: "in turn",
      });
      const loadStart = performance.now();
      const [models] = await Promise.all([Promise.all(names.map((n) => registry!.load(n))), prepareFfmpeg()]);
      let loadMs: number | undefined = performance.now() - loadStart;
      const single = models.length === 1 ? models[0]! : undefined;
      if (shifts && single && single.manifest.architecture !== "htdemucs")
        throw new Error(`shifts is an HTDemucs option; model "${single.manifest.name}" is ${single.manifest.architecture}`);
      if (stems && single) selectStems(single.manifest, stems);

      for (const [i, input] of todo.entries()) {
        if (interrupt.signal.aborted) break;
        progress.start(i + 1, todo.length, input.label);
        let partial: PartialOutput | undefined;
        try {
          partial = await PartialOutput.create(input.outDir, outRoot);
          const common = {
            inputPath: input.path,
            outDir: partial.dir,
            outputs: [{ format }] satisfies OutputSpec[],
            signal: interrupt.signal,
            ...(batchSize !== undefined ? { batchSize } : {}),
            ...(overlap !== undefined ? { overlap } : {}),
            onProgress: (p: { fraction?: number }) => p.fraction !== undefined && progress.update(p.fraction),
          };
          const result: SeparateFileResult = single
            ? await separateFile({
                ...common,
                model: single,
                ...(stems ? { stems } : {}),
                ...(shifts !== undefined ? { shifts } : {}),
              })
            : await separateEnsemble({ ...common, models, algorithm });
          const written = Object.fromEntries(Object.entries(result.stems).map(([stem, files]) => [stem, files[format]!]));
          const files = await partial.commit(input.path, settings, written);
          separated++;
          for (const [stem, path] of Object.entries(files)) io.stdout.write(`${stem}\t${path}\n`);
          io.stdout.write(timingsLine(result, loadMs));
          loadMs = undefined;
          if ("members" in result) {
            const ensemble = result as Awaited<ReturnType<typeof separateEnsemble>>;
            const each = ensemble.members.map((m) => `${m.model} ${(m.timings.totalMs / 1000).toFixed(2)} s`).join(", ");
            io.stdout.write(`ensemble (${algorithm}): ${each}, combining ${(ensemble.combineMs / 1000).toFixed(2)} s\n`);
          }
          progress.line(
            `[${i + 1}/${todo.length}] ${input.label}: separated in ${seconds(result.timings.totalMs)} into ${input.outDir}`,
          );
        } catch (error) {
          await partial?.discard();
          if (interrupt.signal.aborted) {
            interrupted = true;
            progress.line(`[${i + 1}/${todo.length}] ${input.label}: interrupted, its unfinished stems removed`);
            break;
          }
          const message = error instanceof AudioDecodeError ? `not decodable audio: ${error.reason}` : (error as Error).message;
          failed.push({ label: input.label, message });
          progress.line(`[${i + 1}/${todo.length}] ${input.label}: failed: ${message}`);
        }
      }
    }
    progress.stop();
    const left = todo.length - separated - failed.length;
    // a Ctrl-C between two files, or while one was being moved in place, stops the run there too
    interrupted ||= interrupt.signal.aborted && left > 0;

    for (const f of failed) io.stderr.write(`failed: ${f.label}: ${f.message}\n`);
    const counts = [
      `${separated} separated`,
      `${alreadyDone} skipped (already separated)`,
      `${notAudio.length} skipped (not audio)`,
      `${failed.length} failed`,
      ...(interrupted ? [`interrupted with ${left} left to do (run the same command again to finish)`] : []),
    ];
    io.stderr.write(`mixdown separate: ${counts.join(", ")} in ${seconds(performance.now() - started)}\n`);
    return interrupted ? 130 : failed.length > 0 ? 1 : 0;
  } catch (err) {
    if (err instanceof UsageError || (err as NodeJS.ErrnoException).code?.startsWith("ERR_PARSE_ARGS")) {
      io.stderr.write(`mixdown separate: ${(err as Error).message}\n\n${USAGE}`);
      return 2;
    }
    io.stderr.write(`mixdown separate: ${(err as Error).message}\n`);
    return 1;
  } finally {
    process.off("SIGINT", onSigint);
    await registry?.close();
  }
}

/** One file's timings, as the command has always printed them; the model load on the first file only. */
function timingsLine(result: SeparateFileResult, loadMs: number | undefined): string {
  const audioSeconds = result.frames / result.sampleRate;
  const t = result.timings;
  const load = loadMs === undefined ? "models loaded once for the run" : `model load ${loadMs.toFixed(0)} ms`;
  return (
    `${audioSeconds.toFixed(1)} s of audio in ${(t.totalMs / 1000).toFixed(2)} s (${(audioSeconds / (t.totalMs / 1000)).toFixed(1)}x realtime, ${result.chunks} chunks); ` +
    `${load}, decode ${t.decodeMs.toFixed(0)} ms, inference ${t.inferenceMs.toFixed(0)} ms ` +
    `(waited for ${t.inferenceWaitMs.toFixed(0)} ms), post ${t.postMs.toFixed(0)} ms, encode ${t.encodeMs.toFixed(0)} ms; ` +
    `allocator ${runsOnJemalloc() ? "jemalloc" : "system"}\n`
  );
}
