import type * as ort from "onnxruntime-node";
import { cpuArenaEnabled } from "./allocator.ts";
import type { GraphOptimizationLevel } from "./manifest.ts";
import { createLocalSession, createThreadSession, type RunnableSession } from "./inference-session.ts";

export type ExecutionProvider = "cpu" | "webgpu" | "cuda";
export type ProviderFallback = "cpu" | "none";

/** What each provider needs, for the message when it cannot load. */
const PROVIDER_NEEDS: Record<ExecutionProvider, string> = {
  cpu: "",
  webgpu:
    "it needs a GPU whose driver offers Vulkan and the Vulkan loader (libvulkan.so.1, Debian/Ubuntu package libvulkan1); software Vulkan (lavapipe) is refused",
  cuda: "it needs onnxruntime-node's CUDA provider libraries (libonnxruntime_providers_cuda.so, fetched from NuGet by its install script unless ONNXRUNTIME_NODE_INSTALL=skip), CUDA 12 and cuDNN 9",
};

/** How sessions run; the caller reads its own configuration and passes it in. */
export interface InferenceOptions {
  /**
   * default `cpu`. `webgpu` ships in onnxruntime-node and runs through Vulkan
   * on Linux (it needs libvulkan1 and a GPU driver with Vulkan); `cuda` needs
   * the CUDA provider libraries that onnxruntime-node's install script fetches.
   */
  executionProvider?: ExecutionProvider;
  /**
   * What ModelRegistry does when the provider cannot load a model that CPU
   * can: `none` (default) fails, `cpu` runs the model on CPU and says why in
   * the model's `fallbackReason`.
   */
  providerFallback?: ProviderFallback;
  /** threads inside one operator (ORT's default: one per core) */
  intraOpThreads?: number;
  /** threads across independent operators (ORT's default) */
  interOpThreads?: number;
  /**
   * Whether idle intra-op threads spin-wait for work (ORT's own default) instead
   * of sleeping. Default false here: between two session.run calls this thread
   * does the STFT work and ffmpeg encodes, and spinning threads take their CPU
   * (measured in the README).
   */
  spinWait?: boolean;
  /**
   * Run the session on a thread of its own (default true). onnxruntime-node
   * blocks the thread that calls run for the whole inference, so with the
   * session elsewhere the caller decodes, does the STFT work and encodes
   * while the model runs. A name puts it on that inference thread instead of the one this
   * thread's sessions share: two models that run side by side (a vocal split in the same pass
   * as its first model) then do not wait for each other's runs.
   */
  thread?: boolean | string;
  /**
   * How an HTDemucs bag (several members) holds its members' sessions. `together` (the default,
   * for a worker that keeps its models loaded): all opened at load and run side by side over one
   * pass of the song. `in turn` (for a command that runs the model once): one member's session at
   * a time, each member making its own pass over the song, what the members before it gave kept in
   * a temporary file; the peak memory is then one member's instead of every member's, for the same
   * bytes out.
   */
  bagMembers?: "together" | "in turn";
}

export class ModelLoadError extends Error {
  override readonly name: string = "ModelLoadError";
}

/** The provider could not load or run a model that loads and runs on CPU. */
export class ProviderUnavailableError extends ModelLoadError {
  override readonly name = "ProviderUnavailableError";
  readonly provider: ExecutionProvider;
  /** onnxruntime's own message */
  readonly reason: string;

  constructor(provider: ExecutionProvider, onnxPath: string, reason: string, options?: ErrorOptions) {
    super(
      `execution provider "${provider}" cannot run ${onnxPath} (the model runs on cpu): ${oneLine(reason)}; ${PROVIDER_NEEDS[provider]}`,
      options,
    );
    this.provider = provider;
    this.reason = oneLine(reason);
  }
}

/** onnxruntime's messages span lines and repeat its source path; a log line wants one line. */
function oneLine(message: string): string {
  return message.replace(/\s+/g, " ").trim();
}

/**
 * An onnxruntime session for one ONNX file, with the options every family
 * shares, on its own inference thread unless `thread: false`. `graphOptimization` is the model's
 * own (its manifest's), not the caller's: which level is faster or leaner depends on the network.
 */
export async function openSession(
  onnxPath: string,
  options: InferenceOptions = {},
  graphOptimization: GraphOptimizationLevel = "all",
): Promise<RunnableSession> {
  const sessionOptions: ort.InferenceSession.SessionOptions = {
    executionProviders: [options.executionProvider ?? "cpu"],
    graphOptimizationLevel: graphOptimization,
    executionMode: "sequential",
    // No memory pattern: with it onnxruntime's arena, which keeps what it has grown to for as
    // long as the session lives, grows by a second block of the run's whole size on the second
    // run, so each loaded model held about twice its working memory (process RSS, vocals.onnx:
    // 394 -> 288 MB after 6 runs; released-size HTDemucs: 1792 -> 1202 MB after 3; no more CPU
    // per run; see the READMEs). The arena itself stays: without it each run's memory is mapped
    // afresh and a run took 2-4x the CPU, unless the process runs on jemalloc (see allocator.ts),
    // which then shares one run's memory among all the sessions.
    enableMemPattern: false,
    enableCpuMemArena: cpuArenaEnabled(),
    ...(options.intraOpThreads !== undefined ? { intraOpNumThreads: options.intraOpThreads } : {}),
    ...(options.interOpThreads !== undefined ? { interOpNumThreads: options.interOpThreads } : {}),
    extra: { session: { intra_op: { allow_spinning: options.spinWait ? "1" : "0" } } },
  };
  try {
    return options.thread === false
      ? await createLocalSession(onnxPath, sessionOptions)
      : await createThreadSession(onnxPath, sessionOptions, typeof options.thread === "string" ? options.thread : undefined);
  } catch (err) {
    throw new ModelLoadError(`${onnxPath}: ${(err as Error).message}`, { cause: err });
  }
}
