// Runs one separation inside a worker_threads Worker, as the job worker will.
import { parentPort, workerData } from "node:worker_threads";
import { ModelRegistry, separateFile } from "../../src/index.ts";

const { modelsDir, modelName, inputPath, outDir } = workerData as {
  modelsDir: string;
  modelName: string;
  inputPath: string;
  outDir: string;
};
const registry = new ModelRegistry({ modelsDir, intraOpThreads: 1 });
try {
  const model = await registry.load(modelName);
  const result = await separateFile({
    inputPath,
    model,
    outDir,
    outputs: [{ format: "flac" }, { format: "mp3" }],
    onProgress: (progress) => parentPort!.postMessage({ type: "progress", progress }),
  });
  parentPort!.postMessage({ type: "done", result });
} finally {
  await registry.close();
}
