// Runs in a worker_threads Worker: loads voice models (kept between jobs) and does all the audio
// work of a conversion, so the main thread's event loop stays free to renew BullMQ locks.
import { parentPort, workerData } from "node:worker_threads";
import { AudioDecodeError } from "@mixdown/audio";
import { convertVoiceFile, loadVoiceEngine, VoiceModelFileError, type VoiceEngine } from "@mixdown/voice";
import type { VoiceThreadData, VoiceThreadRequest, VoiceThreadResponse } from "./voice-conversion-protocol.ts";

const data = workerData as VoiceThreadData;
const port = parentPort!;
const engines = new Map<string, Promise<VoiceEngine>>();

function engineFor(path: string, sampleRate: number): Promise<VoiceEngine> {
  const key = `${path}@${sampleRate}`;
  let engine = engines.get(key);
  if (engine) {
    engines.delete(key);
  } else {
    engine = loadVoiceEngine(path, {
      sampleRate,
      ...(data.contentVecPath ? { contentVecPath: data.contentVecPath } : {}),
      sessionOptions: {
        ...(data.intraOpThreads > 0 ? { intraOpNumThreads: data.intraOpThreads } : {}),
        ...(data.interOpThreads > 0 ? { interOpNumThreads: data.interOpThreads } : {}),
      },
    });
    engine.catch(() => engines.delete(key));
  }
  engines.set(key, engine);
  while (engines.size > data.cachedModels) {
    const [oldest, loaded] = engines.entries().next().value!;
    engines.delete(oldest);
    void loaded.then((e) => e.close()).catch(() => {});
  }
  return engine;
}

port.on("message", async (request: VoiceThreadRequest) => {
  const post = (m: VoiceThreadResponse) => port.postMessage(m);
  const { id } = request;
  try {
    const engine = await engineFor(request.modelPath, request.sampleRate);
    let last = -1;
    const result = await convertVoiceFile({
      inputPath: request.inputPath,
      ...(request.backingPath ? { backingPath: request.backingPath } : {}),
      engine,
      params: request.params,
      outDir: request.outDir,
      lossless: request.lossless,
      mp3BitrateKbps: request.mp3BitrateKbps,
      onProgress: (fraction) => {
        const percent = Math.floor(fraction * 100);
        if (percent !== last) {
          last = percent;
          post({ type: "progress", id, fraction });
        }
      },
    });
    post({ type: "result", id, result });
  } catch (err) {
    const error = err as Error;
    post({ type: "error", id, message: error.message, unrecoverable: err instanceof AudioDecodeError || err instanceof VoiceModelFileError });
  }
});
