// The model install thread: a catalogue entry's pull (downloads, hash checks, the family's importer,
// whose check runs the converted model on a few seconds of audio) runs here, so the worker's main
// thread stays free to renew job locks.
import { entrySize } from "@mixdown/model-catalogue";
import { pullEntry, PullProblem } from "@mixdown/model-catalogue/pull";
import type { ModelInstallRequest, ModelInstallResult } from "./protocol.ts";
import { serveTasks } from "../../task-threads.ts";

serveTasks<ModelInstallRequest, ModelInstallResult>({
  async run({ entry, modelsDir, assets, mirror }, onProgress, signal) {
    const log: string[] = [];
    const total = entrySize(entry);
    const received = new Map<string, number>();
    const summary = await pullEntry(entry, {
      modelsDir,
      assets,
      mirror,
      log: (line) => log.push(line),
      // The bytes of every file together against the entry's published size (a file's own total where it has none).
      progress: (file) => ({
        update(p) {
          received.set(file, p.received);
          const size = total ?? p.total;
          if (size) onProgress(Math.min(1, [...received.values()].reduce((a, b) => a + b, 0) / size));
        },
        stop: () => {},
      }),
      signal,
    });
    return { summary, log };
  },
  classify(err) {
    // What `models pull` reports and exits 1 on: the same answer on every try (a hash that does not
    // match, a 404, a file its importer refuses), after the download's own retries.
    if (err instanceof PullProblem || (err as Error).name === "PitchImportError")
      return { kind: "permanent", message: (err as Error).message };
    return undefined;
  },
});
