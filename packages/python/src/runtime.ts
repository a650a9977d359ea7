import { spawn } from "node:child_process";
import { access } from "node:fs/promises";

// The Python that converts PyTorch checkpoints once, at import (separation models, RVC voices,
// ContentVec, RMVPE): Debian's python3 with its python3-torch, installed on demand the first time a
// checkpoint is imported, never as part of the base install: the worker only ever runs the ONNX
// files the converters write. One way to find it, install it and run a converter module.

/** A file that cannot be imported, or a setup that cannot import it, with what is wrong and what to do; no stack wanted. */
export class ImportProblem extends Error {
  override readonly name = "ImportProblem";
}

/** What the exporter needs, as Debian packages. */
export const PYTORCH_APT_PACKAGES = [
  "python3",
  "python3-torch",
  "python3-onnx",
  "python3-numpy",
  "python3-yaml",
  "libopenblas0-pthread",
];

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

const lastLine = (text: string) => text.trim().split("\n").pop() ?? "";

export interface PythonModuleRun {
  /** A python3 that can import what the module needs (ensurePyTorch). */
  python: string;
  /** `python -m <module>`. */
  module: string;
  args: readonly string[];
  /** Prepended to PYTHONPATH: the folder the module's package is in. */
  pythonPath: string;
  /** What the module is called in an error, e.g. "the RVC converter". */
  label: string;
  /** The error for exit status 2, the converters' "this file cannot be converted", made from the reason they print last. */
  fileError: (reason: string) => Error;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

/**
 * Runs `python -m module args` with `pythonPath` first on PYTHONPATH, the way every converter of the
 * project runs: exit 0 gives its output; exit 2 is the file's fault (`fileError` with the last line
 * of stderr); any other exit is an Error with the tail of stderr.
 */
export async function runPythonModule(run: PythonModuleRun): Promise<{ stdout: string; stderr: string }> {
  const env = run.env ?? process.env;
  const result = await new Promise<RunResult>((resolve, reject) => {
    const child = spawn(run.python, ["-m", run.module, ...run.args], {
      env: { ...env, PYTHONPATH: [run.pythonPath, env.PYTHONPATH].filter(Boolean).join(":") },
      stdio: ["ignore", "pipe", "pipe"],
      ...(run.signal ? { signal: run.signal } : {}),
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
  if (result.code === 2) throw run.fileError(lastLine(result.stderr));
  if (result.code !== 0)
    throw new Error(`${run.label} failed (exit ${result.code}):\n${result.stderr.trim().split("\n").slice(-15).join("\n")}`);
  return { stdout: result.stdout, stderr: result.stderr };
}

/** The JSON object a converter prints as its last line of output (its manifest or summary). */
export function lastJsonLine(stdout: string, label: string): Record<string, unknown> {
  try {
    const value = JSON.parse(lastLine(stdout)) as unknown;
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("not an object");
    return value as Record<string, unknown>;
  } catch (err) {
    throw new Error(`${label} printed no JSON object last (${(err as Error).message}): ${lastLine(stdout)}`);
  }
}
