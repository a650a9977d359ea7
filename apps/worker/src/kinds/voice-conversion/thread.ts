// The voice conversion thread: loads voice models (kept between jobs, least recently used out)
// and does all the audio work of a conversion.
import { existsSync } from "node:fs";
import { workerData } from "node:worker_threads";
import { AudioDecodeError } from "@mixdown/audio";
import {
  convertVoiceFile,
  FeatureIndexError,
  loadVoiceEngine,
  MissingVoiceAssetError,
  VoiceModelFileError,
  type ConvertVoiceFileResult,
  type VoiceEngine,
} from "@mixdown/voice";
import type { VoiceConversionRequest, VoiceThreadData } from "./protocol.ts";
import { serveTasks } from "../../task-threads.ts";

const data = workerData as VoiceThreadData;
const engines = new Map<string, Promise<VoiceEngine>>();

/** The RMVPE model RVC conversions use, or undefined for YIN (VOICE_PITCH_METHOD). */
function rmvpePath(): string | undefined {
  const path = data.rmvpePath;
  if (data.pitchMethod === "yin" || !path) return undefined;
  if (data.pitchMethod === "auto" && !existsSync(path)) return undefined;
  return path;
}

function engineFor(path: string, sampleRate: number, indexPath: string | undefined): Promise<VoiceEngine> {
  const rmvpe = rmvpePath();
  const key = `${path}@${sampleRate}+${indexPath ?? ""}+${rmvpe ?? "yin"}`;
  let engine = engines.get(key);
  if (engine) {
    engines.delete(key);
  } else {
    engine = loadVoiceEngine(path, {
      sampleRate,
      ...(data.contentVecPath ? { contentVecPath: data.contentVecPath } : {}),
      ...(data.contentVecV1Path ? { contentVecV1Path: data.contentVecV1Path } : {}),
      ...(indexPath ? { indexPath } : {}),
      ...(rmvpe ? { rmvpePath: rmvpe } : {}),
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

serveTasks<VoiceConversionRequest, ConvertVoiceFileResult>({
  async run(request, onProgress, signal) {
    const engine = await engineFor(request.modelPath, request.sampleRate, request.indexPath);
    signal.throwIfAborted();
    return convertVoiceFile({
      signal,
      inputPath: request.inputPath,
      ...(request.inputProbe ? { probe: request.inputProbe } : {}),
      ...(request.backingPath ? { backingPath: request.backingPath } : {}),
      engine,
      params: request.params,
      outDir: request.outDir,
      lossless: request.lossless,
      mp3BitrateKbps: request.mp3BitrateKbps,
      onProgress,
    });
  },
  classify(err) {
    if (err instanceof AudioDecodeError)
      return { kind: "bad-input", message: `The uploaded audio could not be decoded (${err.reason})` };
    if (err instanceof VoiceModelFileError) return { kind: "bad-input", message: err.message };
    if (err instanceof FeatureIndexError) return { kind: "bad-input", message: `the voice model's index: ${err.message}` };
    // Not installed on this worker: no retry helps until someone installs it (the message names the command).
    if (err instanceof MissingVoiceAssetError) return { kind: "permanent", message: err.message };
    return undefined;
  },
});
