// A task thread for the pool's tests: "spin" runs a synchronous loop that never looks at its
// signal (as one long inference call does), "cooperate" waits for its signal, "echo" answers at once.
import { serveTasks } from "../src/task-threads.ts";

serveTasks<{ op: "spin" | "cooperate" | "echo"; value?: number }, { value: number; threadId: number }>({
  // what a model thread loads before it is ready; here, which thread it is
  async preload() {
    return (await import("node:worker_threads")).threadId;
  },
  async run(request, onProgress, signal) {
    const { threadId } = await import("node:worker_threads");
    if (request.op === "spin") {
      onProgress(0.5);
      for (;;) Math.sqrt(Math.random());
    }
    if (request.op === "cooperate") {
      onProgress(0.5);
      await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
    }
    return { value: request.value ?? 0, threadId };
  },
  classify: () => undefined,
});
