import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { familyFor, parseManifest, type SeparationManifest, type SeparationModel } from "./families/index.ts";
import { parseManifestJson, readManifestDirectory } from "./families/manifests.ts";
import { ProviderUnavailableError, type InferenceOptions } from "./inference-options.ts";

export interface ModelRegistryOptions extends InferenceOptions {
  /** directory holding `<name>.json` manifests next to their `.onnx` files */
  modelsDir: string;
  /**
   * Models that run on an inference thread of their own rather than the one the others share:
   * one that runs beside another in the same pass (a vocal separation's split model), so that
   * neither waits for the other's runs. Each costs a thread (a V8 isolate and a malloc arena).
   */
  ownThread?: readonly string[];
  /**
   * Whether a model runs one silent chunk when it loads (default true: a worker loads its models
   * at start, and a model that loads but cannot run then fails there, not in its first job). On
   * the CPU the warmed-up session is then replaced by a fresh one of the same file: onnxruntime's
   * arena keeps the memory of a session's largest run for as long as the session lives, so a
   * warmed-up model the worker's jobs do not use would hold one run's working memory for nothing
   * (the default MDX-Net models: about 155 MB each; the first real run pays 30-80 ms of set-up
   * instead). A one-shot command that runs a model once turns it off on the CPU: there the
   * warm-up is a whole chunk's work done twice. On another provider the warmed-up session is kept,
   * and the warm-up always runs, because that first run is what tells whether the provider works
   * (see #openOnProvider).
   */
  warmUp?: boolean;
}

export class UnknownModelError extends Error {
  override readonly name = "UnknownModelError";
}

/**
 * The separation models one thread has loaded from a directory, by name. Each model's session is
 * created on first use and kept, so jobs after the first pay no load time. It lists nothing: what
 * is installed there is readInstalledModels' to say.
 */
export class ModelRegistry {
  readonly modelsDir: string;
  readonly #inference: InferenceOptions;
  readonly #ownThread: ReadonlySet<string>;
  readonly #warmUp: boolean;
  readonly #loaded = new Map<string, Promise<SeparationModel>>();

  constructor(options: ModelRegistryOptions) {
    const { modelsDir, ownThread, warmUp, ...inference } = options;
    this.modelsDir = modelsDir;
    this.#inference = inference;
    this.#ownThread = new Set(ownThread);
    this.#warmUp = warmUp ?? true;
  }

  /**
   * The model whose manifest is named `name` (normally `<name>.json`), loaded
   * (and warmed up, unless `warmUp` is off) once. A model that can no longer run (its inference thread
   * died, or someone released it) is loaded again. Given its manifest as already read (a job's, from
   * the installed models it was planned with), a model not loaded yet is loaded from that manifest
   * instead of reading the directory again.
   */
  async load(model: string | SeparationManifest): Promise<SeparationModel> {
    const name = typeof model === "string" ? model : model.name;
    const cached = this.#loaded.get(name);
    if (cached) {
      const loaded = await cached.catch(() => undefined);
      // a failed load has already removed itself: the caller sees its error
      if (!loaded) return cached;
      if (!loaded.unusable) return loaded;
      if (this.#loaded.get(name) === cached) this.#loaded.delete(name);
    }
    let loading = this.#loaded.get(name);
    if (!loading) {
      // set before anything is awaited, so that callers at the same time share the one load
      loading = (typeof model === "string" ? this.#manifestOf(model) : Promise.resolve(model)).then((manifest) =>
        this.#openOnProvider(manifest),
      );
      this.#loaded.set(name, loading);
      // a failed load is not cached: the file may be fixed or still being written
      loading.catch(() => this.#loaded.delete(name));
    }
    return loading;
  }

  /** Releases every loaded session. */
  async close(): Promise<void> {
    const models = [...this.#loaded.values()];
    this.#loaded.clear();
    await Promise.all(
      models.map((m) =>
        m.then(
          (x) => x.release(),
          () => undefined,
        ),
      ),
    );
  }

  /**
   * Opens and warms up the model on the configured provider. When that fails,
   * the same model on CPU tells whether the provider or the model is at fault:
   * a model CPU cannot load either fails with CPU's error, one it can fails
   * with ProviderUnavailableError, or runs on CPU where providerFallback is
   * `cpu`. The warm-up is inside the attempt because a provider can create a
   * session and still fail on its first run.
   */
  async #openOnProvider(manifest: SeparationManifest): Promise<SeparationModel> {
    const provider = this.#inference.executionProvider ?? "cpu";
    let opened: SeparationModel | undefined;
    try {
      opened = await this.#open(manifest, this.#inference);
      if (provider !== "cpu") {
        await opened.prepare();
        return opened;
      }
      if (!this.#warmUp) return opened;
      await opened.prepare();
      // the fresh session is opened before the warmed one is released, so that an inference
      // thread of the model's own lives on rather than ending and starting again
      const fresh = await this.#open(manifest, this.#inference);
      await opened.release().catch(() => undefined);
      return fresh;
    } catch (err) {
      await opened?.release().catch(() => undefined);
      if (provider === "cpu") throw err;
      const onCpu = await this.#open(manifest, { ...this.#inference, executionProvider: "cpu" });
      try {
        await onCpu.prepare();
      } catch (cpuErr) {
        await onCpu.release().catch(() => undefined);
        throw cpuErr;
      }
      const unavailable = new ProviderUnavailableError(
        provider,
        onCpu.onnxPath,
        stripPath((err as Error).message, onCpu.onnxPath),
        { cause: err },
      );
      if (this.#inference.providerFallback !== "cpu") {
        await onCpu.release().catch(() => undefined);
        throw unavailable;
      }
      onCpu.fallbackReason = unavailable.message;
      return onCpu;
    }
  }

  async #open(manifest: SeparationManifest, options: InferenceOptions): Promise<SeparationModel> {
    const inference =
      this.#ownThread.has(manifest.name) && options.thread !== false ? { ...options, thread: `model:${manifest.name}` } : options;
    return familyFor(manifest.architecture, manifest.name).load(manifest, this.modelsDir, inference);
  }

  /** The manifest named `name`: `<name>.json` when it names that model, else the one in the directory that does. */
  async #manifestOf(name: string): Promise<SeparationManifest> {
    const direct = join(this.modelsDir, `${name}.json`);
    let text: string | undefined;
    try {
      text = await readFile(direct, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    if (text !== undefined) {
      const manifest = parseManifest(parseManifestJson(text, direct), direct);
      if (manifest.name === name) return manifest;
    }
    const { manifests } = await readManifestDirectory(this.modelsDir);
    const found = manifests.find((m) => m.manifest.name === name);
    if (!found) throw new UnknownModelError(`no model named "${name}" in ${this.modelsDir}`);
    return found.manifest;
  }
}

/** ModelLoadError messages start with the ONNX path; the provider error names it once already. */
function stripPath(message: string, onnxPath: string): string {
  return message.startsWith(`${onnxPath}: `) ? message.slice(onnxPath.length + 2) : message;
}
