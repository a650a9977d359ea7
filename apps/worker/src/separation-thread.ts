// Runs in a worker_threads Worker: owns the onnxruntime sessions and does all decode, DSP,
// inference and encode work, so the main thread's event loop stays free to renew BullMQ locks.
import { parentPort, workerData } from "node:worker_threads";
import { AudioDecodeError } from "@mixdown/audio";
import { ModelRegistry, separateFile, UnknownModelError } from "@mixdown/separation";
import type { SeparationThreadData, ThreadRequest, ThreadResponse } from "./separation-protocol.ts";

const data = workerData as SeparationThreadData;
const registry = new ModelRegistry({
  modelsDir: data.modelsDir,
  executionProvider: data.executionProvider,
  ...(data.intraOpThreads > 0 ? { intraOpThreads: data.intraOpThreads } : {}),
  ...(data.interOpThreads > 0 ? { interOpThreads: data.interOpThreads } : {}),
});
const port = parentPort!;

function post(message: ThreadResponse): void {
  port.postMessage(message);
}

async function preload(): Promise<void> {
  for (const name of data.preload) await registry.load(name);
}

async function handle(request: ThreadRequest): Promise<void> {
  if (request.type === "close") {
    await registry.close();
    post({ type: "closed" });
    return;
  }
  const { id } = request;
  try {
    const model = await registry.load(request.modelName);
    let lastPercent = -1;
    const result = await separateFile({
      inputPath: request.inputPath,
      model,
      outDir: request.outDir,
      outputs: request.outputs,
      onProgress: (p) => {
        const percent = Math.floor((p.fraction ?? 0) * 100);
        if (percent !== lastPercent) {
          lastPercent = percent;
          post({ type: "progress", id, fraction: p.fraction ?? 0 });
        }
      },
    });
    post({ type: "result", id, result });
  } catch (err) {
    const error = err as Error;
    post({
      type: "error",
      id,
      error: {
        name: error.name,
        message: error.message,
        unrecoverable: err instanceof AudioDecodeError || err instanceof UnknownModelError,
      },
    });
  }
}

preload().then(
  () => post({ type: "ready" }),
  (err: Error) => post({ type: "fatal", message: `cannot load models: ${err.message}` }),
);
port.on("message", (request: ThreadRequest) => void handle(request));
