import { access } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";
import { UnrecoverableError } from "bullmq";
import type { VoiceModel } from "@mixdown/db";
import { ObjectNotFoundError, type ObjectStorage } from "@mixdown/storage";
import { BUILTIN_FILE_PREFIX } from "@mixdown/voice/catalogue";

export interface VoiceModelFileSources {
  storage: ObjectStorage;
  /** MODELS_DIR: built-in catalogue voices may name a file there instead of a storage key. */
  modelsDir: string;
}

/**
 * A local path to a voice model's ONNX file. Uploaded and blended models live in object storage
 * at `fileKey` (`voice-models/<id>/...`) and are downloaded to `downloadTo`; built-in catalogue
 * voices name a file under MODELS_DIR (`models:voices/alto.onnx`, as the catalogue registers
 * them, or `voices/alto.onnx` / `models/voices/alto.onnx`), used where it is. A model without a
 * file, or whose file is gone, can never be used: that is an UnrecoverableError naming the model.
 */
export async function resolveVoiceModelFile(model: VoiceModel, sources: VoiceModelFileSources, downloadTo: string): Promise<string> {
  const key = model.fileKey;
  if (!key) throw new UnrecoverableError(`voice model ${model.id} has no model file`);
  if (key.startsWith(BUILTIN_FILE_PREFIX)) {
    const relative = key.slice(BUILTIN_FILE_PREFIX.length);
    if (isAbsolute(relative) || relative.split("/").includes("..")) throw new UnrecoverableError(`voice model ${model.id}: invalid built-in model path ${relative}`);
    const path = resolve(sources.modelsDir, relative);
    if (await access(path).then(() => true, () => false)) return path;
    throw new UnrecoverableError(`the model file of voice model ${model.id} is missing (${key})`);
  }
  if (!key.startsWith("voice-models/")) {
    const candidates = isAbsolute(key) ? [key] : [resolve(sources.modelsDir, key), resolve(sources.modelsDir, key.replace(/^models\//, ""))];
    for (const path of candidates) {
      if (await access(path).then(() => true, () => false)) return path;
    }
  }
  try {
    await sources.storage.downloadToFile(key, downloadTo);
    return downloadTo;
  } catch (err) {
    if (err instanceof ObjectNotFoundError) throw new UnrecoverableError(`the model file of voice model ${model.id} is missing (${key})`);
    throw err;
  }
}
