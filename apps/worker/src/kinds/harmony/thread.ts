// The harmony thread: the key (Essentia's WebAssembly), the pitch track (YIN) and the crossfades
// of each note's render run synchronously, so they run here, never on the worker's main thread
// (whose event loop renews the jobs' locks); the rubberband shifts are ffmpeg children.
import { AudioDecodeError } from "@mixdown/audio";
import { harmonizeVocal, HarmonyInputProblem, type HarmonizeRequest, type HarmonizeResult } from "@mixdown/harmony";
import { serveTasks } from "../../task-threads.ts";

serveTasks<HarmonizeRequest, HarmonizeResult>({
  run: (request, onProgress, signal) => harmonizeVocal(request, { onProgress, signal }),
  classify(err) {
    if (err instanceof AudioDecodeError)
      return { kind: "bad-input", message: `The uploaded audio could not be decoded (${err.reason})` };
    if (err instanceof HarmonyInputProblem) return { kind: "bad-input", message: err.message };
    return undefined;
  },
});
