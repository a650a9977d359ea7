// The native voice build thread: decodes a reference recording and measures the voice in it, so
// the worker's main thread stays free to renew job locks.
import { writeFile } from "node:fs/promises";
import { AudioDecodeError } from "@mixdown/audio";
import { buildNativeVoiceModel, ReferenceRecordingError } from "@mixdown/voice/build";
import type { VoiceBuildRequest, VoiceBuildResult } from "./protocol.ts";
import { serveTasks } from "../../task-threads.ts";

serveTasks<VoiceBuildRequest, VoiceBuildResult>({
  async run(request, _onProgress, signal) {
    const built = await buildNativeVoiceModel([request.referencePath], { slug: "uploaded", title: request.title }, signal);
    await writeFile(request.outPath, built.onnx);
    return { activeSeconds: built.activeSeconds };
  },
  classify(err) {
    if (err instanceof AudioDecodeError)
      return { kind: "bad-input", message: `referenceFile: the audio could not be decoded (${err.reason})` };
    if (err instanceof ReferenceRecordingError) return { kind: "bad-input", message: `referenceFile: ${err.message}` };
    return undefined;
  },
});
