import { mkdtemp, mkdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, extname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { EncodeTarget } from "@mixdown/audio";
import { prepareFfmpeg, probeAudio } from "@mixdown/audio";
import { harmonizeFile } from "@mixdown/harmony";
import { inProcessHarmonyRunners } from "@mixdown/harmony/in-process";
import {
  DEFAULT_ENSEMBLE,
  HARMONY_DIRECTIONS,
  HARMONY_INTERVALS,
  isHarmonyDirection,
  isHarmonyInterval,
  parseMusicalKey,
} from "@mixdown/jobs";
import { ModelRegistry } from "@mixdown/separation";
import { readInstalledModels } from "@mixdown/separation/installed-models";
import { repoRoot } from "../local-state.ts";
import type { CommandOutput } from "./separate.ts";

const USAGE = `usage: mixdown harmony <file> [--key KEY] [--interval third|sixth] [--direction above|below] --out <dir> [options]

Sings a harmony to a lead vocal as the service's harmonies do, on this machine, no service needed:
the vocal's notes, each note's third or sixth on the key's scale, each note shifted on its own
with its formants kept. Writes <dir>/<file's name>.harmony.<format> (the harmony alone) and
<dir>/<file's name>.with-harmony.<format> (the input with the harmony under it), at the input's rate.

  --key KEY           the key, e.g. "A minor", "F# major" (default: found in the file, Essentia's KeyExtractor)
  --interval I        ${HARMONY_INTERVALS.join(" or ")} (default third)
  --direction D       ${HARMONY_DIRECTIONS.join(" or ")} the lead (default above)
  --isolate-vocal     the file is a mix: isolate its vocal first (the vocal separation)
  --out DIR           output directory, created if missing (required)
  --format wav|flac   output format (default wav, 32-bit float; flac is 24-bit)
  --vocals-model NAME the model that isolates the vocal (default vocals)
  --models-dir DIR    where the models' manifests and weights live (default: the repo's models/)
`;

class UsageError extends Error {}

const target = (format: "wav" | "flac", path: string): EncodeTarget =>
  format === "flac" ? { format: "flac", path, bitDepth: 24 } : { format: "wav", path };

/**
 * `mixdown harmony`: `harmonizeFile` on a local file, everything in this process. Returns the exit
 * code (0 done, 1 failed, 2 bad arguments); main.ts imports it only for `harmony`.
 */
export async function harmonyCommand(argv: string[], io: CommandOutput = process): Promise<number> {
  let registry: ModelRegistry | undefined;
  let workDir: string | undefined;
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        key: { type: "string" },
        interval: { type: "string", default: "third" },
        direction: { type: "string", default: "above" },
        "isolate-vocal": { type: "boolean", default: false },
        out: { type: "string" },
        format: { type: "string", default: "wav" },
        "vocals-model": { type: "string", default: "vocals" },
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
    const key = values.key === undefined ? null : parseMusicalKey(values.key);
    if (values.key !== undefined && !key)
      throw new UsageError(`--key must be a tonic and major or minor, e.g. "A minor" or "F# major", got "${values.key}"`);
    const { interval, direction, format } = values;
    if (!isHarmonyInterval(interval))
      throw new UsageError(`--interval must be ${HARMONY_INTERVALS.join(" or ")}, got "${interval}"`);
    if (!isHarmonyDirection(direction))
      throw new UsageError(`--direction must be ${HARMONY_DIRECTIONS.join(" or ")}, got "${direction}"`);
    if (format !== "wav" && format !== "flac") throw new UsageError(`--format must be wav or flac, got "${format}"`);
    const inputPath = resolve(positionals[0]!);
    const outDir = resolve(values.out);
    const modelsDir = resolve(values["models-dir"] ?? join(repoRoot, "models"));
    const [probe] = await Promise.all([probeAudio(inputPath), prepareFfmpeg()]);
    const installed = values["isolate-vocal"] ? (await readInstalledModels(modelsDir)).models : [];
    registry = new ModelRegistry({ modelsDir, warmUp: false, bagMembers: "in turn" });
    await mkdir(outDir, { recursive: true });
    workDir = await mkdtemp(join(tmpdir(), "mixdown-harmony-"));
    const name = basename(inputPath, extname(inputPath));
    const harmonyPath = join(outDir, `${name}.harmony.${format}`);
    const mixPath = join(outDir, `${name}.with-harmony.${format}`);
    const showProgress = io.stderr.isTTY === true;
    const signal = new AbortController().signal;
    const started = performance.now();
    const result = await harmonizeFile({
      inputPath,
      probe,
      key,
      interval,
      direction,
      isolateVocal: values["isolate-vocal"],
      workDir,
      installed,
      models: { vocals: [values["vocals-model"]], vocalsEnsemble: DEFAULT_ENSEMBLE },
      harmonyTargets: [target(format, harmonyPath)],
      mixTargets: [target(format, mixPath)],
      runners: inProcessHarmonyRunners(registry, signal),
      onProgress: (f) => showProgress && io.stderr.write(`\r${(100 * f).toFixed(0)}%`),
      signal,
    });
    if (showProgress) io.stderr.write("\r");
    const seconds = (performance.now() - started) / 1000;
    io.stdout.write(`${harmonyPath}\n${mixPath}\n`);
    io.stdout.write(
      `a ${interval} ${direction} in ${result.key} (${result.keySource === "given" ? "given" : `found, strength ${result.keyConfidence?.toFixed(2)}`}), ` +
        `${result.notes} notes: ${probe.duration.toFixed(1)} s of audio in ${seconds.toFixed(2)} s` +
        `${result.models.length ? ` (models: ${result.models.join(", ")})` : ""}\n`,
    );
    return 0;
  } catch (err) {
    if (err instanceof UsageError || (err as NodeJS.ErrnoException).code?.startsWith("ERR_PARSE_ARGS")) {
      io.stderr.write(`mixdown harmony: ${(err as Error).message}\n\n${USAGE}`);
      return 2;
    }
    io.stderr.write(`mixdown harmony: ${(err as Error).message}\n`);
    return 1;
  } finally {
    await registry?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  }
}
