import { join } from "node:path";
import type { JobQueues } from "@mixdown/queue";
import type { ObjectStorage } from "@mixdown/storage";
import type { JobHandler } from "../run-job.ts";
import type { VoiceBuildPool } from "../voice-build-protocol.ts";

export interface VoiceModelBuildJobDeps {
  storage: ObjectStorage;
  pool: VoiceBuildPool;
  /** To queue the new model's demo and cover once it is ready. */
  queues: Pick<JobQueues, "enqueue">;
}

/** Where a built native model is stored: the same key an uploaded model gets, overwritten by a retry. */
export const builtModelKey = (voiceModelId: number) => `voice-models/${voiceModelId}/model.onnx`;

/**
 * Builds a native voice from the reference recording the API stored: measure the voice in a
 * thread, store the model file; the table publishes the model `ready` (or `failed` with the
 * reason, e.g. a recording with too little voice), then its media is queued as for any new model.
 */
export function voiceModelBuildHandler(deps: VoiceModelBuildJobDeps): JobHandler<"voice-model-build"> {
  return {
    async run({ row: model, rowId, workDir, log, signal }) {
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
