// A task thread for the pool's tests that does what a model thread does: it loads an onnxruntime
// session before it is ready, and a task runs it `runs` times, checking its signal between runs
// (as the separation checks it between chunks), reporting progress just before each call.
import { threadId, workerData } from "node:worker_threads";
import { ort } from "@mixdown/separation/ort";
import { serveTasks } from "../src/task-threads.ts";

const { modelPath, size } = workerData as { modelPath: string; size: number };
let session: ort.InferenceSession;

serveTasks<{ runs: number }, { threadId: number; msPerRun: number }>({
  async preload() {
    session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1, interOpNumThreads: 1 });
    return threadId;
  },
  async run({ runs }, onProgress, signal) {
    const input = new ort.Tensor("float32", new Float32Array(size * size).fill(1), [size, size]);
    const started = performance.now();
    for (let i = 0; i < runs; i++) {
      signal.throwIfAborted();
      onProgress(i / runs);
      await session.run({ x: input });
    }
    return { threadId, msPerRun: (performance.now() - started) / runs };
  },
  classify: () => undefined,
});
