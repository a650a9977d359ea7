// `voices import-pitch`: installs the RMVPE pitch model RVC conversions use, from RVC's `rmvpe.pt`
// (converted once by Mixdown's own PyTorch implementation, python/mixdown_voice) or from an
// `rmvpe.onnx` (the community's export takes the same mel input), checked by running it.
import { copyFile, mkdir, open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { runPythonModule } from "@mixdown/python";
import { RmvpePitch } from "../pitch/rmvpe.ts";
import { VOICE_PYTHON_PATH } from "./python-path.ts";

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
      await runPythonModule({
        python,
        module: "mixdown_voice.export_rmvpe",
        args: [file, partial],
        pythonPath: VOICE_PYTHON_PATH,
        label: "the RMVPE converter",
        fileError: (reason) => new PitchImportError(`${file}: ${reason}`),
        env,
      });
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
