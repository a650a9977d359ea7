// The audio analysis thread: Essentia's WebAssembly runs synchronously, so it runs here, never
// on the worker's main thread (whose event loop renews the jobs' locks).
import { AudioDecodeError } from "@mixdown/audio";
import { analyzeAudioFile, essentiaVersion } from "@mixdown/analysis";
import { serveTasks } from "../../task-threads.ts";
import type { AudioAnalysisRequest, AudioAnalysisThreadResult } from "./protocol.ts";

serveTasks<AudioAnalysisRequest, AudioAnalysisThreadResult>({
  async preload() {
    // the WebAssembly module compiles once, before the first job
    return essentiaVersion();
  },
  async run(request, onProgress, signal) {
    const analysis = await analyzeAudioFile(request.inputPath, {
      signal,
      ...(request.inputProbe ? { probe: request.inputProbe } : {}),
      onProgress: (percent) => onProgress(percent / 100),
    });
    return { analysis, analyzer: `essentia.js ${essentiaVersion()}; ffmpeg ebur128` };
  },
  classify(err) {
    if (err instanceof AudioDecodeError)
      return { kind: "bad-input", message: `The uploaded audio could not be decoded (${err.reason})` };
    return undefined;
  },
});
