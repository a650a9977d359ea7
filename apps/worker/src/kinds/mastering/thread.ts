// The mastering thread: Matchering's stages are CPU work in JavaScript, so they run here, never
// on the worker's main thread (whose event loop renews the jobs' locks).
import { AudioDecodeError, StereoPcmEncoder } from "@mixdown/audio";
import { matchReference, MatcheringInputError, MATCHERING_DEFAULTS, normalizeLoudness } from "@mixdown/mastering";
import { serveTasks } from "../../task-threads.ts";
import type { MasteringRequest, MasteringThreadResult } from "./protocol.ts";

serveTasks<MasteringRequest, MasteringThreadResult>({
  async run(request, onProgress, signal) {
    const { outputs } = request;
    if (request.loudness) {
      const { applied } = await normalizeLoudness(request.targetPath, {
        target: request.loudness,
        sampleRate: request.sampleRate,
        outputs: [
          { format: "wav", path: outputs.wav24, bitDepth: 24 },
          { format: "wav", path: outputs.wav16, bitDepth: 16 },
          { format: "mp3", path: outputs.mp3, bitrateKbps: request.mp3BitrateKbps },
        ],
        signal,
        onProgress,
      });
      return { processor: `ffmpeg loudnorm ${applied.normalizationType}` };
    }
    if (!request.referencePath) throw new Error("a reference mastering needs its reference");
    const encoder = new StereoPcmEncoder({
      inputSampleRate: MATCHERING_DEFAULTS.internalSampleRate,
      targets: [
        { format: "wav", path: outputs.wav24, sampleFormat: "s24" },
        { format: "wav", path: outputs.wav16, sampleFormat: "s16" },
        { format: "mp3", path: outputs.mp3, bitrateKbps: request.mp3BitrateKbps },
      ],
      signal,
    });
    try {
      await matchReference(request.targetPath, request.referencePath, {
        write: (block) => encoder.write(block),
        scratchDir: request.scratchDir,
        signal,
        onProgress,
      });
      await encoder.finish();
    } catch (err) {
      await encoder.abort();
      throw err;
    }
    return { processor: "matchering" };
  },
  classify(err) {
    if (err instanceof MatcheringInputError) return { kind: "bad-input", message: `${err.field}File: ${err.message}` };
    if (err instanceof AudioDecodeError)
      return { kind: "bad-input", message: `The uploaded audio could not be decoded (${err.reason})` };
    return undefined;
  },
});
