import { join } from "node:path";
import { JobFailure } from "@mixdown/jobs";
import { blendOnnxModels, IncompatibleModelsError, InvalidModelError } from "@mixdown/onnx-blend";
import type { JobQueues } from "@mixdown/queue";
import { voiceModelKeys, type ObjectStorage } from "@mixdown/storage";
import type { JobHandler } from "../../run-job.ts";
import type { VoiceModelFiles } from "../../voice-model-files.ts";
import type { WorkerKind } from "../context.ts";

export interface VoiceBlendJobDeps {
  storage: ObjectStorage;
  modelFiles: VoiceModelFiles;
  /** To queue the new model's demo and cover once it is ready. */
  queues: Pick<JobQueues, "enqueue">;
}

/** Where a blend's output model file is stored. Deterministic, so a retry overwrites its own file. */

/**
 * Blends the job's models into its output model: fetch the files, weighted sum of the float
 * weights (@mixdown/onnx-blend), store the new file; the table publishes model (`ready`) and job
 * (`success`) in one transaction. Inputs that can never blend (a model gone or without a file,
 * different architectures, shapes or constants) are `bad-input`. The blend takes well under a
 * second for RVC-sized models, so it runs on this thread: the job lock is renewed long before it
 * could expire.
 */
export function voiceBlendHandler(deps: VoiceBlendJobDeps): JobHandler<"voice-blend"> {
  return {
    async run({ row: { job: row, inputs }, workDir, setProgress, signal }) {
      const wanted = [row.model1Id, row.model2Id, row.model3Id, row.model4Id].filter((m): m is number => m !== null);
      const gone = wanted.filter((id) => !inputs.some((i) => i.model.id === id));
      if (gone.length > 0) throw new JobFailure("bad-input", `voice model ${gone.join(", ")} no longer exists`);
      const first = inputs[0]!.model;
      for (const { model } of inputs) {
        if (model.state !== "ready")
          throw new JobFailure("bad-input", `voice model ${model.id} is not usable (state ${model.state})`);
        if (model.architecture !== first.architecture || model.sampleRate !== first.sampleRate) {
          throw new JobFailure(
            "bad-input",
            `voice model ${model.id} (${model.architecture}, ${model.sampleRate} Hz) cannot be blended with voice model ${first.id} (${first.architecture}, ${first.sampleRate} Hz)`,
          );
        }
      }
      const paths = await Promise.all(inputs.map(({ model }) => deps.modelFiles.resolve(model)));
      await setProgress(30);
      const output = join(workDir, "model.onnx");
      const result = await blendOnnxModels({
        inputs: inputs.map(({ model, alpha }, i) => ({ path: paths[i]!, alpha, label: `voice model ${model.id}` })),
        output,
      }).catch((err: unknown) => {
        if (err instanceof IncompatibleModelsError || err instanceof InvalidModelError) {
          throw new JobFailure("bad-input", `The voice models cannot be blended: ${err.message}`);
        }
        throw err;
      });
      await setProgress(80);
      signal.throwIfAborted();
      const fileKey = voiceModelKeys(row.outputModelId).model;
      await deps.storage.putFile(fileKey, output, { contentType: "application/octet-stream" });
      return {
        fileKey,
        details: {
          size: result.size,
          blendedTensors: result.blended,
          ...(result.truncated.length ? { truncated: result.truncated } : {}),
        },
      };
    },
    async discard({ row: { job: row } }) {
      await deps.storage.delete(voiceModelKeys(row.outputModelId).model);
    },
    // Also after a lost update (updated false): the media job does nothing when it is not owed.
    async afterComplete({ row: { job: row }, log }) {
      await deps.queues
        .enqueue({ queue: "voice-model-media", payload: { voiceModelId: row.outputModelId } })
        .catch((err: Error) => log.warn({ err: err.message }, "could not queue the blended model's media; the reconciler will"));
    },
  };
}

export const voiceBlendKind: WorkerKind<"voice-blend"> = {
  start: ({ storage, modelFiles, queues }) => voiceBlendHandler({ storage, modelFiles, queues }),
};
