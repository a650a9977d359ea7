import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { JobFailure } from "@mixdown/jobs";
import { inspectVoiceModelFile, VoiceModelFileError } from "@mixdown/voice/model-file";
import { convertRvcCheckpoint } from "@mixdown/voice/rvc-checkpoint";
import type { JobQueues } from "@mixdown/queue";
import type { ObjectStorage } from "@mixdown/storage";
import type { JobHandler } from "../run-job.ts";
import type { VoiceBuildPool } from "../voice-build-protocol.ts";

export interface VoiceModelBuildJobDeps {
  storage: ObjectStorage;
  pool: VoiceBuildPool;
  /** A python3 with Debian's PyTorch for converting RVC `.pth` files (installed on demand). */
  python: () => Promise<string>;
  /** To queue the new model's demo and cover once it is ready. */
  queues: Pick<JobQueues, "enqueue">;
}

/** Where a built native model is stored: the same key an uploaded model gets, overwritten by a retry. */
export const builtModelKey = (voiceModelId: number) => `voice-models/${voiceModelId}/model.onnx`;

/**
 * An RVC `.pth` the API stored: converted once by Mixdown's own synthesizer (a Python child
 * process with Debian's PyTorch, installed on demand), the result checked by its signature and
 * stored as the model file. A file the converter refuses fails the model with its reason.
 */
async function convertCheckpoint(
  deps: VoiceModelBuildJobDeps,
  key: string,
  rowId: number,
  workDir: string,
  log: { info: (o: object, m: string) => void },
  signal: AbortSignal,
): Promise<{ fileKey: string; details: Record<string, string | number> }> {
  const pthPath = join(workDir, "model.pth");
  await deps.storage.downloadToFile(key, pthPath);
  let python: string;
  try {
    python = await deps.python();
  } catch (err) {
    throw new JobFailure("permanent", `converting an RVC .pth needs PyTorch on the worker: ${(err as Error).message}`);
  }
  const outPath = join(workDir, "model.onnx");
  const started = performance.now();
  let info;
  try {
    info = await convertRvcCheckpoint(pthPath, outPath, { python, signal });
  } catch (err) {
    if (err instanceof VoiceModelFileError) throw new JobFailure("bad-input", `modelFile: ${err.message}`);
    throw err;
  }
  const graph = inspectVoiceModelFile(await readFile(outPath));
  if (graph.architecture !== "rvc" || !graph.rvcGraph?.startsWith("mixdown"))
    throw new Error(`the RVC converter wrote an unexpected graph (${graph.architecture}/${graph.rvcGraph})`);
  const fileKey = builtModelKey(rowId);
  await deps.storage.putFile(fileKey, outPath, { contentType: "application/octet-stream" });
  const seconds = Math.round((performance.now() - started) / 100) / 10;
  log.info({ ...info, seconds }, "RVC .pth converted");
  return { fileKey, details: { convertedFrom: "pth", version: info.version, speakers: info.speakers, convertSeconds: seconds } };
}

/**
 * Builds a native voice from the reference recording the API stored: measure the voice in a
 * thread, store the model file; the table publishes the model `ready` (or `failed` with the
 * reason, e.g. a recording with too little voice), then its media is queued as for any new model.
 */
export function voiceModelBuildHandler(deps: VoiceModelBuildJobDeps): JobHandler<"voice-model-build"> {
  return {
    async run({ row: model, rowId, workDir, log, signal }) {
      if (model.architecture === "rvc") return convertCheckpoint(deps, model.referenceKey, rowId, workDir, log, signal);
      const referencePath = join(workDir, "reference");
      await deps.storage.downloadToFile(model.referenceKey, referencePath);
      const outPath = join(workDir, "model.onnx");
      const built = await deps.pool.run({ referencePath, outPath, title: model.title }, () => {}, signal);
      const fileKey = builtModelKey(rowId);
      await deps.storage.putFile(fileKey, outPath, { contentType: "application/octet-stream" });
      log.info({ activeSeconds: built.activeSeconds }, "native voice built");
      return { fileKey, details: { source: "reference", activeSeconds: Math.round(built.activeSeconds * 10) / 10 } };
    },
    // Also after a lost update: the media job does nothing for a model that is not ready.
    async afterComplete({ rowId, log }) {
      await deps.queues
        .enqueue({ queue: "voice-model-media", payload: { voiceModelId: rowId } })
        .catch((err: Error) => log.warn({ err: err.message }, "could not queue the built model's media; the reconciler will"));
    },
  };
}
