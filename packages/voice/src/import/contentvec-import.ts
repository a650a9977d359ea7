// `voices import-features`: installs the content-feature models RVC models take. A HuBERT /
// ContentVec checkpoint (fairseq's `hubert_base.pt` layout) is converted once by Mixdown's own
// implementation (python/mixdown_voice/hubert.py) into both forms (768-d layer 12 for v2, 256-d
// layer 9 + final_proj for v1); an ONNX (the community's vec-768-layer-12.onnx or
// vec-256-layer-9.onnx) is installed as the form its output width says. Each is run on 1 s of
// silence before it is renamed into place.
import { copyFile, mkdir, open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { runPythonModule } from "@mixdown/python";
import { ort } from "@mixdown/separation/ort";
import { VOICE_PYTHON_PATH } from "./python-path.ts";
import { PitchImportError } from "./rmvpe-import.ts";

export interface ContentVecTargets {
  /** Where the 768-d (RVC v2) model goes: MODELS_DIR/VOICE_CONTENTVEC_MODEL. */
  v2: string;
  /** Where the 256-d (RVC v1) model goes: MODELS_DIR/VOICE_CONTENTVEC_V1_MODEL. */
  v1: string;
}

/** The feature width of a content model, found by running it on 1 s of silence; throws if it is not one. */
async function featureWidth(path: string): Promise<number> {
  const session = await ort.InferenceSession.create(path).catch((err: Error) => {
    throw new PitchImportError(`the file is not an ONNX model onnxruntime loads (${err.message.split("\n")[0]})`);
  });
  try {
    const out = await session.run({
      [session.inputNames[0]!]: new ort.Tensor("float32", new Float32Array(16000), [1, 1, 16000]),
    });
    const dims = out[session.outputNames[0]!]!.dims;
    if (dims.length !== 3 || dims[0] !== 1 || Math.abs(dims[1]! - 50) > 2)
      throw new PitchImportError(`not a content-feature model: 1 s of audio gave [${dims.join(", ")}], expected [1, ~49, width]`);
    return dims[2]!;
  } catch (err) {
    if (err instanceof PitchImportError) throw err;
    throw new PitchImportError(`not a content-feature model ([1, 1, samples] in): ${(err as Error).message.split("\n")[0]}`);
  } finally {
    await session.release();
  }
}

export async function importContentVec(
  file: string,
  targets: ContentVecTargets,
  options: { python: () => Promise<string>; log?: (line: string) => void; env?: NodeJS.ProcessEnv },
): Promise<{ installed: string[]; converted: boolean }> {
  const env = options.env ?? process.env;
  const handle = await open(file, "r").catch((err: NodeJS.ErrnoException) => {
    throw new PitchImportError(`${file}: ${err.code === "ENOENT" ? "no such file" : err.message}`);
  });
  const magic = Buffer.alloc(4);
  await handle.read(magic, 0, 4, 0);
  await handle.close();
  const checkpoint = (magic[0] === 0x50 && magic[1] === 0x4b) || magic[0] === 0x80;
  const parts = { v2: `${targets.v2}.${process.pid}.part`, v1: `${targets.v1}.${process.pid}.part` };
  await mkdir(dirname(targets.v2), { recursive: true });
  await mkdir(dirname(targets.v1), { recursive: true });
  try {
    const installed: string[] = [];
    if (checkpoint) {
      const python = await options.python();
      options.log?.(`converting ${file} with Mixdown's HuBERT implementation`);
      await runPythonModule({
        python,
        module: "mixdown_voice.export_hubert",
        args: [file, parts.v2, parts.v1],
        pythonPath: VOICE_PYTHON_PATH,
        label: "the HuBERT converter",
        fileError: (reason) => new PitchImportError(`${file}: ${reason}`),
        env,
      });
      for (const form of ["v2", "v1"] as const) {
        const exists = await open(parts[form], "r").then(
          (h) => h.close().then(() => true),
          () => false,
        );
        if (!exists) continue;
        const width = await featureWidth(parts[form]);
        if (width !== (form === "v2" ? 768 : 256))
          throw new PitchImportError(
            `${file}: its ${form} features are ${width}-d, RVC ${form} models take ${form === "v2" ? 768 : 256}`,
          );
        await rename(parts[form], targets[form]);
        installed.push(targets[form]);
      }
    } else {
      await copyFile(file, parts.v2);
      const width = await featureWidth(parts.v2).catch((err: Error) => {
        throw new PitchImportError(`${file}: ${err.message}`);
      });
      if (width !== 768 && width !== 256)
        throw new PitchImportError(`${file}: gives ${width}-d features; RVC models take 768 (v2) or 256 (v1)`);
      const target = width === 768 ? targets.v2 : targets.v1;
      await rename(parts.v2, target);
      installed.push(target);
    }
    return { installed, converted: checkpoint };
  } finally {
    await rm(parts.v2, { force: true });
    await rm(parts.v1, { force: true });
  }
}
