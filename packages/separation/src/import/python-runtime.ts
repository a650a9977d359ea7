import { spawn } from "node:child_process";
import { access } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { ImportProblem } from "./identify.ts";

/**
 * The Python that converts PyTorch checkpoints once, at import: Debian's
 * python3 with its python3-torch. It is installed on demand, the first time
 * a checkpoint is imported, never as part of the base install: the worker
 * only ever runs the ONNX files it writes.
 */

/** What the exporter needs, as Debian packages. */
export const PYTORCH_APT_PACKAGES = [
  "python3",
  "python3-torch",
  "python3-onnx",
  "python3-numpy",
  "python3-yaml",
  "libopenblas0-pthread",
];

/** `packages/separation/python`, the exporter's PYTHONPATH. */
export const EXPORTER_PATH = fileURLToPath(new URL("../../python", import.meta.url));

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runProcess(
  command: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; onStderr?: (text: string) => void } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
      options.onStderr?.(d);
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/**
 * The python3 to run: `MIXDOWN_PYTHON`, else the system's /usr/bin/python3
 * (where Debian's packages land, whatever pyenv or a venv puts first on PATH).
 */
export async function pythonCommand(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.MIXDOWN_PYTHON) return env.MIXDOWN_PYTHON;
  return access("/usr/bin/python3").then(
    () => "/usr/bin/python3",
    () => "python3",
  );
}

async function hasPyTorch(python: string): Promise<boolean> {
  const probe = await runProcess(python, ["-c", "import torch, onnx, numpy, yaml"]).catch(() => undefined);
  return probe?.code === 0;
}

/**
 * Makes sure `python` can import torch and onnx, installing Debian's packages
 * with apt-get when it cannot (as root, or through sudo without a password).
 * Throws ImportProblem saying what to run when that is not possible.
 */
export async function ensurePyTorch(log: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const python = await pythonCommand(env);
  if (await hasPyTorch(python)) return python;
  const manual = `apt-get install ${PYTORCH_APT_PACKAGES.join(" ")}`;
  if (env.MIXDOWN_PYTHON)
    throw new ImportProblem(
      `${python} (MIXDOWN_PYTHON) cannot import torch and onnx: install them there, or unset MIXDOWN_PYTHON`,
    );
  const root = process.getuid?.() === 0;
  const sudo = root ? [] : ["sudo", "-n"];
  if (!root && (await runProcess("sudo", ["-n", "true"]).catch(() => undefined))?.code !== 0)
    throw new ImportProblem(
      `converting a PyTorch checkpoint needs Debian's PyTorch, once: run \`sudo ${manual}\`, then import again`,
    );
  const apt = async (...args: string[]) => {
    const [command, ...rest] = [...sudo, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", ...args];
    return runProcess(command!, rest);
  };
  log(`installing PyTorch from Debian for the one-time conversion (${PYTORCH_APT_PACKAGES.join(" ")}); this takes a few minutes`);
  let result = await apt("install", "-y", "-qq", "--no-install-recommends", ...PYTORCH_APT_PACKAGES);
  if (result.code !== 0) {
    log("apt-get update");
    await apt("update", "-qq");
    result = await apt("install", "-y", "-qq", "--no-install-recommends", ...PYTORCH_APT_PACKAGES);
  }
  if (result.code !== 0 || !(await hasPyTorch(python)))
    throw new ImportProblem(
      `installing PyTorch failed (${result.stderr.trim().split("\n").pop() ?? `exit ${result.code}`}); run \`${root ? "" : "sudo "}${manual}\` yourself, then import again`,
    );
  return python;
}

/**
 * Runs `python -m mixdown_export <family> ...`; returns the manifest it
 * prints. Its exit status 2 is the file's fault (ImportProblem with its
 * message); anything else is reported with its stderr's tail.
 */
export async function runExporter(
  python: string,
  args: { family: string; checkpoint: string; config?: string; outDir: string; name: string },
  env: NodeJS.ProcessEnv = process.env,
): Promise<Record<string, unknown>> {
  const argv = [
    "-m",
    "mixdown_export",
    args.family,
    "--checkpoint",
    args.checkpoint,
    "--out-dir",
    args.outDir,
    "--name",
    args.name,
  ];
  if (args.config) argv.push("--config", args.config);
  const pythonPath = [EXPORTER_PATH, env.PYTHONPATH].filter(Boolean).join(":");
  const result = await runProcess(python, argv, { env: { ...env, PYTHONPATH: pythonPath } });
  const lastLine = (text: string) => text.trim().split("\n").pop() ?? "";
  if (result.code === 2) throw new ImportProblem(`${args.checkpoint}: ${lastLine(result.stderr)}`);
  if (result.code !== 0)
    throw new Error(
      `the ${args.family} exporter failed (exit ${result.code}):\n${result.stderr.trim().split("\n").slice(-15).join("\n")}`,
    );
  try {
    const manifest = JSON.parse(lastLine(result.stdout)) as unknown;
    if (typeof manifest !== "object" || manifest === null || Array.isArray(manifest)) throw new Error("not an object");
    return manifest as Record<string, unknown>;
  } catch (err) {
    throw new Error(`the ${args.family} exporter printed no manifest (${(err as Error).message}): ${lastLine(result.stdout)}`);
  }
}
