import { mkdtemp, mkdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, extname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { prepareFfmpeg, probeAudio } from "@mixdown/audio";
import { DEFAULT_ENSEMBLE, VOCAL_REPAIR_STEPS, type VocalRepairStep } from "@mixdown/jobs";
import { repairVocalFile } from "@mixdown/repair";
import { inProcessRunners } from "@mixdown/repair/in-process";
import { ModelRegistry, runsOnJemalloc } from "@mixdown/separation";
import { readInstalledModels } from "@mixdown/separation/installed-models";
import { repoRoot } from "../local-state.ts";
import type { CommandOutput } from "./separate.ts";

const USAGE = `usage: mixdown repair <file> --denoise [--dereverb] [--isolate-vocal] --out <dir> [options]

Repairs a vocal as the service's vocal repairs do, on this machine, no service needed: the steps
asked for run in their fixed order (${VOCAL_REPAIR_STEPS.join(", then ")}), and the result is written
as <dir>/<file's name>.repaired.<format> at the input's rate.

  --dereverb          remove the room's reverb (the vocal split model's reverb stem, subtracted)
  --denoise           remove noise (RNNoise, 48 kHz frames of 480 samples, each channel on its own)
  --isolate-vocal     the file is a mix: isolate its vocal first (the vocal separation)
  --out DIR           output directory, created if missing (required)
  --format wav|flac   output format (default wav, 32-bit float; flac is 24-bit)
  --vocals-model NAME the model that isolates the vocal (default vocals)
  --split-model NAME  the vocal split model dereverb runs (default vocalsplit)
  --models-dir DIR    where the models' manifests and weights live (default: the repo's models/)

At least one of --dereverb and --denoise.
`;

class UsageError extends Error {}

/**
 * `mixdown repair`: `repairVocalFile` on a local file with the models run in this process. Returns
 * the exit code (0 done, 1 failed, 2 bad arguments); main.ts imports it only for `repair`.
 */
export async function repairCommand(argv: string[], io: CommandOutput = process): Promise<number> {
  let registry: ModelRegistry | undefined;
  let workDir: string | undefined;
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        denoise: { type: "boolean", default: false },
        dereverb: { type: "boolean", default: false },
        "isolate-vocal": { type: "boolean", default: false },
        out: { type: "string" },
        format: { type: "string", default: "wav" },
        "vocals-model": { type: "string", default: "vocals" },
        "split-model": { type: "string", default: "vocalsplit" },
        "models-dir": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
    if (values.help) {
      io.stdout.write(USAGE);
      return 0;
    }
    if (positionals.length !== 1) throw new UsageError("expected exactly one input file");
    if (!values.out) throw new UsageError("--out is required");
    const steps: VocalRepairStep[] = VOCAL_REPAIR_STEPS.filter((step) => values[step]);
    if (steps.length === 0) throw new UsageError(`name at least one step: ${VOCAL_REPAIR_STEPS.map((s) => `--${s}`).join(", ")}`);
    if (values.format !== "wav" && values.format !== "flac")
      throw new UsageError(`--format must be wav or flac, got "${values.format}"`);
    const inputPath = resolve(positionals[0]!);
    const outDir = resolve(values.out);
    const modelsDir = resolve(values["models-dir"] ?? join(repoRoot, "models"));
    const [probe] = await Promise.all([probeAudio(inputPath), prepareFfmpeg()]);
    const needsModels = values["isolate-vocal"] || steps.includes("dereverb");
    const installed = needsModels ? (await readInstalledModels(modelsDir)).models : [];
    registry = new ModelRegistry({ modelsDir, warmUp: false, bagMembers: "in turn" });
    await mkdir(outDir, { recursive: true });
    workDir = await mkdtemp(join(tmpdir(), "mixdown-repair-"));
    const output = join(outDir, `${basename(inputPath, extname(inputPath))}.repaired.${values.format}`);
    const showProgress = io.stderr.isTTY === true;
    const signal = new AbortController().signal;
    const started = performance.now();
    const { models } = await repairVocalFile({
      inputPath,
      probe,
      steps,
      isolateVocal: values["isolate-vocal"],
      workDir,
      installed,
      models: { vocals: [values["vocals-model"]], vocalsEnsemble: DEFAULT_ENSEMBLE, vocalSplit: values["split-model"] },
      targets: [values.format === "flac" ? { format: "flac", path: output, bitDepth: 24 } : { format: "wav", path: output }],
      runners: inProcessRunners(registry, signal),
      onProgress: (f) => showProgress && io.stderr.write(`\r${(100 * f).toFixed(0)}%`),
      signal,
    });
    if (showProgress) io.stderr.write("\r");
    const seconds = (performance.now() - started) / 1000;
    io.stdout.write(`${output}\n`);
    io.stdout.write(
      `${values["isolate-vocal"] ? "isolated the vocal, then " : ""}${steps.join(", then ")}: ${probe.duration.toFixed(1)} s of audio in ${seconds.toFixed(2)} s` +
        `${models.length ? ` (models: ${models.join(", ")})` : ""}; allocator ${runsOnJemalloc() ? "jemalloc" : "system"}\n`,
    );
    return 0;
  } catch (err) {
    if (err instanceof UsageError || (err as NodeJS.ErrnoException).code?.startsWith("ERR_PARSE_ARGS")) {
      io.stderr.write(`mixdown repair: ${(err as Error).message}\n\n${USAGE}`);
      return 2;
    }
    io.stderr.write(`mixdown repair: ${(err as Error).message}\n`);
    return 1;
  } finally {
    await registry?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  }
}
