import { createHash } from "node:crypto";
import { access, mkdir, rename, rm } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import type { VoiceModel } from "@mixdown/db";
import { JobFailure } from "@mixdown/jobs";
import { KEY_AREAS, ObjectNotFoundError, type ObjectStorage } from "@mixdown/storage";
import { BUILTIN_FILE_PREFIX } from "@mixdown/voice/catalogue";

/** Where every stored (uploaded, blended, built) voice model's files are: `voiceModelKeys`' area. */
const STORED_MODEL_KEYS = `${KEY_AREAS.voiceModels}/`;

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/**
 * Local paths of voice models' ONNX files (and RVC models' feature indexes), for every job that uses a model (conversion, blend,
 * demo). Uploaded and blended models live in object storage at `fileKey` (`voice-models/<id>/...`)
 * and are downloaded once into `cacheDir`, named by the key's sha256: a model's file never changes
 * once it is ready, and the conversion threads keep loaded models by path. Built-in catalogue
 * voices name a file under MODELS_DIR (`models:voices/alto.onnx` as the catalogue registers them,
 * or the legacy `voices/alto.onnx` / `models/voices/alto.onnx`), used where it is. A model without
 * a file, or whose file is gone, can never be used: a `permanent` JobFailure naming the model.
 */
export class VoiceModelFiles {
  constructor(private readonly sources: { storage: ObjectStorage; modelsDir: string; cacheDir: string }) {}

  async resolve(model: Pick<VoiceModel, "id" | "fileKey">): Promise<string> {
    const key = model.fileKey;
    const missing = () => new JobFailure("permanent", `the model file of voice model ${model.id} is missing (${key})`);
    if (!key) throw new JobFailure("permanent", `voice model ${model.id} has no model file`);
    if (key.startsWith(BUILTIN_FILE_PREFIX)) {
      const relative = key.slice(BUILTIN_FILE_PREFIX.length);
      if (isAbsolute(relative) || relative.split("/").includes(".."))
        throw new JobFailure("permanent", `voice model ${model.id}: invalid built-in model path ${relative}`);
      const path = resolve(this.sources.modelsDir, relative);
      if (await exists(path)) return path;
      throw missing();
    }
    if (!key.startsWith(STORED_MODEL_KEYS)) {
      const candidates = isAbsolute(key)
        ? [key]
        : [resolve(this.sources.modelsDir, key), resolve(this.sources.modelsDir, key.replace(/^models\//, ""))];
      for (const path of candidates) if (await exists(path)) return path;
    }
    return this.#download(key, ".onnx", missing);
  }

  /**
   * Local path of an RVC model's feature index (`metadata.indexKey`, a faiss `.index` stored with
   * the model), or undefined for a model without one.
   */
  async resolveIndex(model: Pick<VoiceModel, "id" | "metadata">): Promise<string | undefined> {
    const metadata = model.metadata as { indexKey?: unknown } | null;
    const key = metadata?.indexKey;
    if (key === undefined || key === null) return undefined;
    if (typeof key !== "string" || !key.startsWith(STORED_MODEL_KEYS))
      throw new JobFailure("permanent", `voice model ${model.id}: invalid index key ${JSON.stringify(key)}`);
    return this.#download(
      key,
      ".index",
      () => new JobFailure("permanent", `the index of voice model ${model.id} is missing (${key})`),
    );
  }

  async #download(key: string, ext: string, missing: () => JobFailure): Promise<string> {
    const path = join(this.sources.cacheDir, `${createHash("sha256").update(key).digest("hex").slice(0, 24)}${ext}`);
    if (await exists(path)) return path;
    await mkdir(this.sources.cacheDir, { recursive: true });
    // Downloaded beside the final name and renamed, so a concurrent job never reads half a file.
    const partial = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.part`;
    try {
      await this.sources.storage.downloadToFile(key, partial);
    } catch (err) {
      await rm(partial, { force: true });
      if (err instanceof ObjectNotFoundError) throw missing();
      throw err;
    }
    await rename(partial, path);
    return path;
  }
}
