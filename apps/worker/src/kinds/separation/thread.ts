// The separation thread: owns the onnxruntime sessions of the separation models.
import { workerData } from "node:worker_threads";
import { AudioDecodeError } from "@mixdown/audio";
import { ModelRegistry, separateEnsemble, separateFile, UnknownModelError, type SeparateFileResult } from "@mixdown/separation";
import type { SeparationModelProvider, SeparationRequest, SeparationThreadData } from "./protocol.ts";
import { serveTasks } from "../../task-threads.ts";

const data = workerData as SeparationThreadData;
const registry = new ModelRegistry({
  modelsDir: data.modelsDir,
  ownThread: data.ownThread,
  executionProvider: data.executionProvider,
  providerFallback: data.providerFallback,
  ...(data.intraOpThreads > 0 ? { intraOpThreads: data.intraOpThreads } : {}),
  ...(data.interOpThreads > 0 ? { interOpThreads: data.interOpThreads } : {}),
});

serveTasks<SeparationRequest, SeparateFileResult>({
  async preload(): Promise<SeparationModelProvider[]> {
    const providers: SeparationModelProvider[] = [];
    for (const manifest of data.preload) {
      const model = await registry.load(manifest);
      providers.push({
        model: manifest.name,
        requested: data.executionProvider,
        running: model.executionProvider,
        ...(model.fallbackReason ? { fallbackReason: model.fallbackReason } : {}),
      });
    }
    return providers;
  },
  async run(request, onProgress, signal) {
    // a model this thread has not loaded yet is loaded from the manifest the job read, when it sent one
    const load = (name: string) => registry.load(request.manifests?.find((m) => m.name === name) ?? name);
    if (request.ensemble) {
      const models = [];
      for (const name of request.ensemble.models) models.push(await load(name));
      return separateEnsemble({
        signal,
        inputPath: request.inputPath,
        ...(request.inputProbe ? { probe: request.inputProbe } : {}),
        models,
        algorithm: request.ensemble.algorithm,
        stems: request.ensemble.stems,
        outDir: request.outDir,
        outputs: request.outputs,
        onProgress: (p) => onProgress(p.fraction ?? 0),
      });
    }
    const model = await load(request.modelName);
    const { split } = request;
    return separateFile({
      signal,
      inputPath: request.inputPath,
      ...(request.inputProbe ? { probe: request.inputProbe } : {}),
      model,
      outDir: request.outDir,
      outputs: request.outputs,
      ...(request.stems ? { stems: request.stems } : {}),
      ...(split
        ? { split: { model: await load(split.modelName), of: split.of, stems: split.stems, remainder: split.remainder } }
        : {}),
      onProgress: (p) => onProgress(p.fraction ?? 0),
    });
  },
  classify(err) {
    if (err instanceof AudioDecodeError)
      return { kind: "bad-input", message: `The uploaded audio could not be decoded (${err.reason})` };
    if (err instanceof UnknownModelError) return { kind: "permanent", message: err.message };
    return undefined;
  },
});
