import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { modelServes, readInstalledModels } from "@mixdown/separation/installed-models";
import {
  CatalogueError,
  entrySize,
  installedEntries,
  readModelCatalogue,
  voiceAssetPaths,
  type CatalogueEntry,
  type ModelCatalogue,
} from "@mixdown/model-catalogue";
import { UsageError } from "../database.ts";
import { importSeparation, pullEntry, PullProblem, type PullContext } from "@mixdown/model-catalogue/pull";
import { progressReporter, pullUrl } from "../model-pull.ts";
import { modelsUsage } from "../usage.ts";

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
    options: INSTALL_FLAGS,
  });
  if (positionals.length !== 1) throw new UsageError(`Usage:\n${modelsUsage}`);
  const ctx = pullContext(values["models-dir"], env, values.force ?? false);
  return printInstalled(
    importSeparation(
      resolve(positionals[0]!),
      values.config !== undefined ? resolve(values.config) : undefined,
      values.name,
      mdxFlags(values),
      ctx,
      values["model-data"] !== undefined ? resolve(values["model-data"]) : undefined,
    ),
  );
}

/** `models quantize NAME`: an int8 copy of an installed model's linear layers, installed beside it. */
async function quantizeCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { as: { type: "string" }, "models-dir": { type: "string" } },
  });
  if (positionals.length !== 1) throw new UsageError(`Usage:\n${modelsUsage}`);
  const modelsDir = resolve(values["models-dir"] ?? env.MODELS_DIR ?? REPO_MODELS);
  const { quantizeInstalledModel } = await import("@mixdown/separation/import");
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return printInstalled(
    quantizeInstalledModel(modelsDir, positionals[0]!, values.as).then(
      (q) =>
        `installed ${q.name}: ${q.layers} linear layers in int8, ${mb(q.bytesBefore)} -> ${mb(q.bytesAfter)} (${q.manifestPath})`,
    ),
  );
}

/** Prints what an install says and exits 0, or its PullProblem (or a converter's ImportProblem) and exits 1. */
async function printInstalled(install: Promise<string>): Promise<number> {
  try {
    console.log(await install);
    return 0;
  } catch (err) {
    // ImportProblem by name: @mixdown/separation/import is loaded only by the commands that convert
    if (err instanceof PullProblem || (err as Error).name === "ImportProblem") {
      console.error((err as Error).message);
      return 1;
    }
    throw err;
  }
}

type MdxFlagValues = { "n-fft"?: string; "dim-f"?: string; "dim-t"?: string; compensate?: string; "primary-stem"?: string };
const MDX_FLAGS = {
  "model-data": { type: "string" },
  "n-fft": { type: "string" },
  "dim-f": { type: "string" },
  "dim-t": { type: "string" },
  compensate: { type: "string" },
  "primary-stem": { type: "string" },
} as const;

/** What `models import FILE` and `models pull` both take. */
const INSTALL_FLAGS = {
  config: { type: "string" },
  name: { type: "string" },
  force: { type: "boolean" },
  "models-dir": { type: "string" },
  ...MDX_FLAGS,
} as const;

const mdxFlags = (values: MdxFlagValues) => ({
  nFft: positiveNumber("--n-fft", values["n-fft"]),
  dimF: positiveNumber("--dim-f", values["dim-f"]),
  dimT: positiveNumber("--dim-t", values["dim-t"]),
  compensate: positiveNumber("--compensate", values.compensate),
  primaryStem: values["primary-stem"],
});

export function pullContext(
  modelsDirFlag: string | undefined,
  env: Record<string, string | undefined>,
  force: boolean,
): PullContext {
  const modelsDir = resolve(modelsDirFlag ?? env.MODELS_DIR ?? REPO_MODELS);
  const log = (line: string) => console.error(line);
  return {
    modelsDir,
    assets: voiceAssetPaths(modelsDir, env),
    mirror: env.MIXDOWN_MODEL_MIRROR || undefined,
    env,
    log,
    progress: progressReporter(process.stderr.isTTY === true, log),
    force,
  };
}

async function catalogue(env: Record<string, string | undefined>): Promise<ModelCatalogue> {
  try {
    return await readModelCatalogue(env.MIXDOWN_MODEL_CATALOGUE || undefined);
  } catch (err) {
    if (err instanceof CatalogueError) throw new UsageError(err.message);
    throw err;
  }
}

/**
 * Installs the named catalogue entries that are missing (all of them with force); stops at the
 * first failure. `say` gets each "installed ..." line (stdout unless the caller wants it clean).
 */
export async function pullModels(
  names: string[],
  ctx: PullContext,
  env: Record<string, string | undefined>,
  say: (line: string) => void = (line) => console.log(line),
): Promise<number> {
  const list = await catalogue(env);
  const unknown = names.filter((n) => !list.models.some((m) => m.name === n));
  if (unknown.length > 0)
    throw new UsageError(
      `not in the catalogue: ${unknown.join(", ")} (see ./mixdown.sh models available; any other file: models pull URL)`,
    );
  const installed = await installedEntries(list, ctx.modelsDir, ctx.assets);
  for (const name of names) {
    const entry = list.models.find((m) => m.name === name)!;
    if (installed.has(name) && !ctx.force) {
      ctx.log(`${name} is installed already (--force to pull it again)`);
      continue;
    }
    try {
      say(await pullEntry(entry, ctx));
    } catch (err) {
      if (err instanceof PullProblem || (err as Error).name === "PitchImportError") {
        console.error(`cannot pull ${name}: ${(err as Error).message}`);
        return 1;
      }
      throw err;
    }
  }
  return 0;
}

/** The catalogue names MIXDOWN_MODELS lists (comma-separated). */
export const configuredModels = (env: Record<string, string | undefined>) =>
  (env.MIXDOWN_MODELS ?? "")
    .split(",")
    .map((n) => n.trim())
    .filter(Boolean);

/**
 * MIXDOWN_MODELS: pulls what is missing, then names the defaults the list makes: for each job kind
 * whose setting (SEPARATION_MODEL_VOCALS / _STEMS) is not set, the first listed model that serves
 * it. `up` passes them to its children; the docker image's entrypoint exports them.
 */
export async function pullConfiguredModels(
  ctx: PullContext,
  env: Record<string, string | undefined>,
  say: (line: string) => void,
): Promise<{ code: number; defaults: Record<string, string> }> {
  const names = configuredModels(env);
  const defaults: Record<string, string> = {};
  if (names.length === 0) return { code: 0, defaults };
  ctx.log(`MIXDOWN_MODELS: ${names.join(", ")}`);
  const code = await pullModels(names, ctx, env, say);
  if (code !== 0) return { code, defaults };
  const { models } = await readInstalledModels(ctx.modelsDir);
  const settings = [
    ["SEPARATION_MODEL_VOCALS", "vocal-separation"],
    ["SEPARATION_MODEL_STEMS", "stem-split"],
  ] as const;
  for (const [setting, kind] of settings) {
    if (env[setting]) continue;
    const first = names.map((n) => models.find((m) => m.name === n)).find((m) => m && modelServes(m, kind));
    if (first) defaults[setting] = first.name;
  }
  for (const [setting, value] of Object.entries(defaults))
    ctx.log(`${setting}=${value} (the first of MIXDOWN_MODELS that serves it)`);
  return { code, defaults };
}

/** `models pull NAME... | URL`. */
async function pullCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...INSTALL_FLAGS,
      sha256: { type: "string" },
      "from-env": { type: "boolean" },
      "print-defaults": { type: "boolean" },
    },
  });
  const ctx = pullContext(values["models-dir"], env, values.force ?? false);
  if (values["from-env"]) {
    if (positionals.length > 0) throw new UsageError("--from-env pulls what MIXDOWN_MODELS names; give no names with it");
    // With --print-defaults stdout carries only shell assignments (the docker entrypoint evaluates them).
    const clean = values["print-defaults"] ?? false;
    const { code, defaults } = await pullConfiguredModels(ctx, env, clean ? ctx.log : (line) => console.log(line));
    if (clean) for (const [setting, value] of Object.entries(defaults)) console.log(`export ${setting}='${value}'`);
    return code;
  }
  if (positionals.length === 0) throw new UsageError(`Usage:\n${modelsUsage}`);
  const urls = positionals.filter((p) => /^(https?|file):\/\//.test(p));
  if (urls.length > 0) {
    if (positionals.length !== 1) throw new UsageError("models pull takes one URL at a time");
    return printInstalled(
      pullUrl(
        urls[0]!,
        {
          ...(values.sha256 !== undefined ? { sha256: values.sha256 } : {}),
          ...(values.config !== undefined ? { config: values.config } : {}),
          ...(values.name !== undefined ? { name: values.name } : {}),
          ...(values["model-data"] !== undefined ? { modelData: resolve(values["model-data"]) } : {}),
          mdx: mdxFlags(values),
        },
        ctx,
      ),
    );
  }
  for (const flag of ["sha256", "config", "name"] as const)
    if (values[flag] !== undefined) throw new UsageError(`--${flag} goes with models pull URL; a catalogue entry has its own`);
  return pullModels(positionals, ctx, env);
}

const quality = (entry: CatalogueEntry) =>
  entry.reported
    .slice(0, 2)
    .map((r) => `${r.stem} ${r.metric} ${r.value}`)
    .join("; ") || "-";

/** `models available`: the catalogue, with what is installed here. */
async function availableCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { "models-dir": { type: "string" } } });
  const ctx = pullContext(values["models-dir"], env, false);
  const list = await catalogue(env);
  const installed = await installedEntries(list, ctx.modelsDir, ctx.assets);
  const rows = [
    ["name", "installed", "family", "stems", "size", "reported", "serves"],
    ...list.models.map((m) => {
      const size = entrySize(m);
      return [
        m.name,
        installed.has(m.name) ? "yes" : "no",
        m.family,
        m.stems?.join(",") ?? "-",
        size === undefined ? "?" : `${(size / 1024 / 1024).toFixed(0)} MB`,
        quality(m),
        m.kind === "voice-asset" ? "RVC voice conversion" : m.kind === "tts-voice" ? "text to speech" : servesOf(m),
      ];
    }),
  ];
  printTable(rows);
  console.log(
    `\nInstall with: ./mixdown.sh models pull NAME   (catalogue: ${env.MIXDOWN_MODEL_CATALOGUE || "models/catalogue.json"})`,
  );
  return 0;
}

function servesOf(m: CatalogueEntry): string {
  const stems = m.stems ?? [];
  const kinds = [];
  if (stems.includes("vocals")) kinds.push("vocal separation");
  if (stems.length > 1) kinds.push("stem split");
  return kinds.join(", ") || "-";
}

function printTable(rows: string[][]): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows)
    console.log(
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    );
}

/** `models list`: reads the manifests in MODELS_DIR (no model is loaded); `models import`: see importCommand. */
export async function modelsCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const [action, ...rest] = argv;
  if (action === "import") return importCommand(rest, env);
  if (action === "pull") return pullCommand(rest, env);
  if (action === "available") return availableCommand(rest, env);
  if (action === "quantize") return quantizeCommand(rest, env);
  if (action !== "list") throw new UsageError(`Usage:\n${modelsUsage}`);
  const { values } = parseArgs({ args: rest, options: { "models-dir": { type: "string" } } });
  const modelsDir = resolve(values["models-dir"] ?? env.MODELS_DIR ?? REPO_MODELS);
  const [{ models, invalid }, speeds] = await Promise.all([readInstalledModels(modelsDir), lastSpeeds(modelsDir)]);
  const table = [
    ["name", "family", "stems", "size", "speed"],
    ...models.map((m) => [
      m.name,
      m.family,
      m.stems.join(","),
      `${(m.sizeBytes / 1024 / 1024).toFixed(1)} MB`,
      speeds.get(m.name) ?? "-",
    ]),
  ];
  console.log(`separation models in ${modelsDir}:`);
  printTable(table);
  for (const bad of invalid) console.error(`not listed: ${bad.error}`);
  return 0;
}
