// `voices import-pitch`: installs the RMVPE pitch model RVC conversions use, from RVC's `rmvpe.pt`
// (converted once by Mixdown's own PyTorch implementation, python/mixdown_voice) or from an
// `rmvpe.onnx` (the community's export takes the same mel input), checked by running it.
import { spawn } from "node:child_process";
import { copyFile, mkdir, open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { RmvpePitch } from "../pitch/rmvpe.ts";

/** `packages/voice/python`, the converter's PYTHONPATH. */
export const VOICE_PYTHON_PATH = fileURLToPath(new URL("../../python", import.meta.url));

export class PitchImportError extends Error {
  override readonly name = "PitchImportError";
}

export interface ImportRmvpeOptions {
  /** A python3 that can import torch and onnx (installed on demand by the caller), for `.pt` files. */
  python: () => Promise<string>;
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}

async function head(path: string, bytes: number): Promise<Buffer> {
  const handle = await open(path, "r");
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/**
 * Installs `file` (a `rmvpe.pt` state dict, told apart by its zip/pickle header, or an RMVPE ONNX)
 * as `target`: converted or copied beside it, loaded and run on 32 silent frames (salience
 * [1, 32, 360] expected), then renamed into place, so a bad file leaves nothing behind.
 */
export async function importRmvpe(file: string, target: string, options: ImportRmvpeOptions): Promise<{ converted: boolean }> {
  const log = options.log ?? (() => {});
  const env = options.env ?? process.env;
  const magic = await head(file, 4).catch((err: NodeJS.ErrnoException) => {
    throw new PitchImportError(`${file}: ${err.code === "ENOENT" ? "no such file" : err.message}`);
  });
  // torch.save writes a zip (PK\x03\x04) since 1.6, a bare pickle (\x80) before.
  const checkpoint = (magic[0] === 0x50 && magic[1] === 0x4b) || magic[0] === 0x80;
  await mkdir(dirname(target), { recursive: true });
  const partial = `${target}.${process.pid}.part`;
  try {
    if (checkpoint) {
      const python = await options.python();
      log(`converting ${file} to ONNX with Mixdown's RMVPE implementation`);
      const pythonPath = [VOICE_PYTHON_PATH, env.PYTHONPATH].filter(Boolean).join(":");
      const result = await run(python, ["-m", "mixdown_voice.export_rmvpe", file, partial], { ...env, PYTHONPATH: pythonPath });
      const last = (text: string) => text.trim().split("\n").pop() ?? "";
      if (result.code === 2) throw new PitchImportError(`${file}: ${last(result.stderr)}`);
      if (result.code !== 0)
        throw new Error(
          `the RMVPE converter failed (exit ${result.code}):\n${result.stderr.trim().split("\n").slice(-15).join("\n")}`,
        );
    } else {
      await copyFile(file, partial);
    }
    try {
      await (await RmvpePitch.load(partial, { intraOpNumThreads: 1 })).close();
    } catch (err) {
      throw new PitchImportError(`${file}: ${(err as Error).message.replaceAll(partial, "the file")}`);
    }
    await rename(partial, target);
    return { converted: checkpoint };
  } finally {
    await rm(partial, { force: true });
  }
}
