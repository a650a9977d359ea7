import { fileURLToPath } from "node:url";
import { ImportProblem, lastJsonLine, runPythonModule } from "@mixdown/python";

/** `packages/separation/python`, the exporter's PYTHONPATH. */
export const EXPORTER_PATH = fileURLToPath(new URL("../../python", import.meta.url));

/**
 * Runs `python -m mixdown_export <family> ...`; returns the manifest it prints last. Its exit
 * status 2 is the file's fault (ImportProblem with its message); anything else is reported with
 * its stderr's tail.
 */
export async function runExporter(
  python: string,
  args: { family: string; checkpoint: string; config?: string; outDir: string; name: string },
  env: NodeJS.ProcessEnv = process.env,
): Promise<Record<string, unknown>> {
  const argv = [args.family, "--checkpoint", args.checkpoint, "--out-dir", args.outDir, "--name", args.name];
  if (args.config) argv.push("--config", args.config);
  const label = `the ${args.family} exporter`;
  const { stdout } = await runPythonModule({
    python,
    module: "mixdown_export",
    args: argv,
    pythonPath: EXPORTER_PATH,
    label,
    fileError: (reason) => new ImportProblem(`${args.checkpoint}: ${reason}`),
    env,
  });
  return lastJsonLine(stdout, label);
}
