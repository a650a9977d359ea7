import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { readSeparationModels } from "@mixdown/separation/catalog";
import { UsageError } from "../database.ts";

export const modelsUsage = `./mixdown.sh models list [--models-dir DIR]   the installed separation models: family, stems,
                                size, and speed (the last \`pnpm bench:separation\` figure for the
                                model on this machine, else "-": listing measures nothing)
./mixdown.sh models import FILE [--config YAML] [--name NAME] [--force] [--models-dir DIR]
                                installs a model you own: an HTDemucs .th, a demucs bag .yaml (with
                                its .th files next to it), an MSST BS-/Mel-Band RoFormer or MDX23C
                                .ckpt with its --config yaml, or an MDX-Net .onnx (geometry from
                                UVR's model_data.json next to it or --model-data FILE, or given
                                with --n-fft --dim-f --dim-t [--compensate] [--primary-stem]).
                                PyTorch checkpoints are converted to ONNX once (Debian's PyTorch is
                                installed for that on first use); the result is run on a few
                                seconds of audio before it is installed`;

const REPO_MODELS = fileURLToPath(new URL("../../../../models", import.meta.url));
/** Where packages/separation/scripts/bench.ts leaves its last results. */
const LAST_BENCH = join(tmpdir(), "mixdown-bench", "last-bench.json");

interface BenchResult {
  model: string;
  modelsDir: string;
  seconds: number;
  totalMs: number;
}

/** Times realtime per model of the last benchmark run over `modelsDir`, its longest input first. */
async function lastSpeeds(modelsDir: string): Promise<Map<string, string>> {
  const speeds = new Map<string, string>();
  let results: BenchResult[];
  try {
    results = JSON.parse(await readFile(LAST_BENCH, "utf8")) as BenchResult[];
  } catch {
    return speeds;
  }
  if (!Array.isArray(results)) return speeds;
  for (const r of [...results].sort((a, b) => b.seconds - a.seconds)) {
    if (resolve(r.modelsDir ?? "") !== modelsDir || speeds.has(r.model) || !(r.totalMs > 0)) continue;
    speeds.set(r.model, `${(r.seconds / (r.totalMs / 1000)).toFixed(1)}x realtime (${r.seconds} s input)`);
  }
  return speeds;
}

const positiveNumber = (flag: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${flag} must be a positive number, got ${JSON.stringify(value)}`);
  return n;
};

/** `models import FILE`: identifies, converts, checks and installs one model. */
async function importCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: "string" },
      name: { type: "string" },
      force: { type: "boolean" },
      "models-dir": { type: "string" },
      "model-data": { type: "string" },
      "n-fft": { type: "string" },
      "dim-f": { type: "string" },
      "dim-t": { type: "string" },
      compensate: { type: "string" },
      "primary-stem": { type: "string" },
    },
  });
  if (positionals.length !== 1) throw new UsageError(`Usage:\n${modelsUsage}`);
  const modelsDir = resolve(values["models-dir"] ?? env.MODELS_DIR ?? REPO_MODELS);
  const { importModel, ImportProblem, TorchFileError } = await import("@mixdown/separation/import");
  try {
    const imported = await importModel({
      file: resolve(positionals[0]!),
      modelsDir,
      ...(values.config !== undefined ? { config: resolve(values.config) } : {}),
      ...(values.name !== undefined ? { name: values.name } : {}),
      ...(values["model-data"] !== undefined ? { modelData: resolve(values["model-data"]) } : {}),
      force: values.force ?? false,
      mdx: {
        nFft: positiveNumber("--n-fft", values["n-fft"]),
        dimF: positiveNumber("--dim-f", values["dim-f"]),
        dimT: positiveNumber("--dim-t", values["dim-t"]),
        compensate: positiveNumber("--compensate", values.compensate),
        primaryStem: values["primary-stem"],
      },
      log: (line) => console.error(line),
      env: env as NodeJS.ProcessEnv,
    });
    console.log(
      `installed ${imported.name} (${imported.family}; stems ${imported.stems.join(", ")}) in ${modelsDir}: ` +
        `${imported.check.realtime.toFixed(1)}x realtime on the ${imported.check.seconds} s check`,
    );
    return 0;
  } catch (err) {
    if (err instanceof ImportProblem || err instanceof TorchFileError) {
      console.error(`cannot import: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

/** `models list`: reads the manifests in MODELS_DIR (no model is loaded); `models import`: see importCommand. */
export async function modelsCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const [action, ...rest] = argv;
  if (action === "import") return importCommand(rest, env);
  if (action !== "list") throw new UsageError(`Usage:\n${modelsUsage}`);
  const { values } = parseArgs({ args: rest, options: { "models-dir": { type: "string" } } });
  const modelsDir = resolve(values["models-dir"] ?? env.MODELS_DIR ?? REPO_MODELS);
  const [{ models, invalid }, speeds] = await Promise.all([readSeparationModels(modelsDir), lastSpeeds(modelsDir)]);
  const rows = [
    ["name", "family", "stems", "size", "speed"],
    ...models.map((m) => [
      m.name,
      m.family,
      m.stems.join(","),
      `${(m.sizeBytes / 1024 / 1024).toFixed(1)} MB`,
      speeds.get(m.name) ?? "-",
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  console.log(`separation models in ${modelsDir}:`);
  for (const r of rows)
    console.log(
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    );
  for (const bad of invalid) console.error(`not listed: ${bad.error}`);
  return 0;
}
