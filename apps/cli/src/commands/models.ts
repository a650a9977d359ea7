import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { readSeparationModels } from "@mixdown/separation/catalog";
import { UsageError } from "../database.ts";

export const modelsUsage = `./mixdown.sh models list [--models-dir DIR]   the installed separation models: family, stems,
                                size, and speed (the last \`pnpm bench:separation\` figure for the
                                model on this machine, else "-": listing measures nothing)`;

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

/** `models list`: reads the manifests in MODELS_DIR (no model is loaded). */
export async function modelsCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const [action, ...rest] = argv;
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
