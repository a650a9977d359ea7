// The denoise thread: RNNoise's WebAssembly runs synchronously, frame after frame, so it runs here,
// never on the worker's main thread (whose event loop renews the jobs' locks).
import { AudioDecodeError } from "@mixdown/audio";
import { denoiseFile, RnnoiseChannel, type DenoiseFileResult } from "@mixdown/repair";
import { serveTasks } from "../../task-threads.ts";
import type { DenoiseRequest } from "./protocol.ts";

serveTasks<DenoiseRequest, DenoiseFileResult>({
  async preload() {
    // the WebAssembly module compiles once, before the first job
    (await RnnoiseChannel.create()).destroy();
    return null;
  },
  async run(request, onProgress, signal) {
    return denoiseFile(request.inputPath, {
      signal,
      targets: request.targets,
      ...(request.inputProbe ? { probe: request.inputProbe } : {}),
      onProgress,
    });
  },
  classify(err) {
    if (err instanceof AudioDecodeError)
      return { kind: "bad-input", message: `The uploaded audio could not be decoded (${err.reason})` };
    return undefined;
  },
});
