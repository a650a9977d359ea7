import type { Prisma, PrismaClient, VoiceModel } from "../generated/prisma/client.ts";
import type { JobTable } from "./job-table.ts";
import { voiceModelJobRows } from "./voice-model-media.ts";

/**
 * A model still to be built: from its stored reference recording or `.pth` (`referenceKey`), or
 * from the link it is imported from (`sourceUrl`). To the reconciler, a running `voice-model-build` job.
 */
export const VOICE_MODEL_AWAITING_BUILD = {
  state: "pending",
  OR: [{ referenceKey: { not: null } }, { sourceUrl: { not: null } }],
} as const satisfies Prisma.VoiceModelWhereInput;

/** A row of VOICE_MODEL_AWAITING_BUILD: `referenceKey` or `sourceUrl` is set. */
export type VoiceModelToBuild = VoiceModel;

export interface BuiltVoiceModel {
  /** Storage key of the built ONNX file (`voice-models/<id>/model.onnx`). */
  fileKey: string;
  /** Facts of the build merged into the model's metadata (e.g. `activeSeconds`, an index's `indexKey`). */
  details: Prisma.InputJsonObject;
  /** What a downloaded file turned out to be, when the import could not know it before. */
  architecture?: string;
  sampleRate?: number;
}

/**
 * A voice model build as a job (`voice-model-build`): the pending VoiceModel row is the record.
 * `complete` publishes the model `ready`; `fail` and `cancel` end it `failed` with the reason in
 * `buildError`.
 */
export function voiceModelBuildTable(prisma: PrismaClient): JobTable<VoiceModelToBuild, BuiltVoiceModel> {
  const end = async (id: number, buildError: string) =>
    (await prisma.voiceModel.updateMany({ where: { id, ...VOICE_MODEL_AWAITING_BUILD }, data: { state: "failed", buildError } }))
      .count === 1;
  return {
    findRunnable: async (id) =>
      (await prisma.voiceModel.findFirst({ where: { id, ...VOICE_MODEL_AWAITING_BUILD } })) as VoiceModelToBuild | null,
    callerOf: (model) => model.ownerId,
    markStarted: async () => {},
    setProgress: async () => {},
    complete(id, built) {
      return prisma.$transaction(async (tx) => {
        const model = await tx.voiceModel.findFirst({ where: { id, ...VOICE_MODEL_AWAITING_BUILD } });
        if (!model) return false;
        const metadata = { ...(model.metadata as Prisma.JsonObject), ...built.details };
        const { count } = await tx.voiceModel.updateMany({
          where: { id, ...VOICE_MODEL_AWAITING_BUILD },
          data: {
            state: "ready",
            fileKey: built.fileKey,
            metadata,
            buildError: null,
            ...(built.architecture ? { architecture: built.architecture } : {}),
            ...(built.sampleRate ? { sampleRate: built.sampleRate } : {}),
          },
        });
        return count === 1;
      });
    },
    fail: end,
    cancel: (id) => end(id, "cancelled"),
    ...voiceModelJobRows(prisma, "voice-model-build", VOICE_MODEL_AWAITING_BUILD, "buildEnqueuedAt"),
  };
}
