import { resolve } from "node:path";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { VocalRepairJobRepository } from "@mixdown/db";
import { VOCAL_REPAIR_STEPS } from "@mixdown/jobs";
import { Type, type Static } from "typebox";
import type { AppContext } from "../../app-context.ts";
import { FilePart, FormSchema } from "../../http/form-schema.ts";
import { jobReadRoutes, multipartJobCreateRoute } from "../../http/job-routes.ts";
import { WebhookUrlField } from "../../jobs/job-origin.ts";
import type { ApiKind } from "../context.ts";
import { VocalRepairService } from "./service.ts";

/** A vocal repair's create form: what the document shows and what a request is validated by (a pipeline's `repair` step takes its `steps`). */
export const vocalRepairForm = (maxMb: number) =>
  Type.Object({
    inputFile: FilePart(`wav, webm, mp3 or flac; max ${maxMb} MB`),
    steps: Type.String({
      description: `The repairs to run, comma-separated (\`dereverb,denoise\`), one or more of ${VOCAL_REPAIR_STEPS.join(", ")}; they run in that order whatever order they are named in. \`dereverb\`: the room's reverb removed (the vocal split's \`reverb\` stem subtracted, SEPARATION_MODEL_VOCAL_SPLIT); \`denoise\`: RNNoise (Xiph's 2018 model, 48 kHz frames of 480 samples, each channel on its own)`,
    }),
    isolateVocal: Type.Optional(
      Type.Boolean({
        description:
          "`true`: the input is a mix; its vocal is isolated first by the vocal separation (the server's SEPARATION_MODEL_VOCALS, as a vocal separation that names no model) and the steps run on it; default false (the input is a vocal)",
      }),
    ),
    webhookUrl: WebhookUrlField,
  });

/** The vocal repair form's own wording of its fields' failures (a pipeline's `repair` step says the same). */
export const VOCAL_REPAIR_FIELD_MESSAGES = {
  steps: { required: () => `steps is required: one or more of ${VOCAL_REPAIR_STEPS.join(", ")}, comma-separated` },
};

/** A vocal repair's create, as its form schema reads it. */
export type VocalRepairForm = Static<ReturnType<typeof vocalRepairForm>>;

/** `/vocal-repairs`: create (multipart), list, fetch, cancel, delete. */
const vocalRepairRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; service: VocalRepairService }> = async (
  app,
  { ctx, service },
) => {
  const { config } = ctx;
  const maxMb = Math.round(config.MAX_SEPARATION_UPLOAD_BYTES / 1024 / 1024);
  const tags = ["Vocal repairs"];
  const form = new FormSchema(vocalRepairForm(maxMb), {
    inputFile: { required: () => "inputFile is required (a wav, webm, mp3 or flac file part)" },
    ...VOCAL_REPAIR_FIELD_MESSAGES,
  });
  multipartJobCreateRoute(app, ctx, {
    path: "vocal-repairs",
    tags,
    operationId: "createVocalRepair",
    summary: "Create a vocal repair job and queue it",
    description: `Mixdown: removes noise (\`denoise\`, RNNoise) and room reverb (\`dereverb\`, the vocal split's reverb stem) from a vocal, or from the vocal of a mix (\`isolateVocal=true\`). Multipart form with one file part \`inputFile\`: wav, webm, mp3 or flac (decided from the bytes), at most ${maxMb} MB (MAX_SEPARATION_UPLOAD_BYTES) and MAX_SEPARATION_SECONDS long, as a separation's; text fields \`steps\` (required), \`isolateVocal\`, \`webhookUrl\`. An unknown or missing step is a 422 naming it; \`dereverb\` and \`isolateVocal\` are refused (422) when the server has no model for them. The repaired vocal keeps the input's rate and channels (\`outputFileUrl\`: the lossless format, \`lossyOutputFileUrl\`: mp3).`,
    form,
    files: { inputFile: { maxBytes: config.MAX_SEPARATION_UPLOAD_BYTES } },
    record: "VocalRepairJob",
    status: 200,
    kind: "vocal_repair",
    service,
  });

  jobReadRoutes(
    app,
    {
      path: "vocal-repairs",
      tags,
      noun: "vocal repair",
      record: "VocalRepairJob",
      recordKind: "vocal_repair",
      operation: "VocalRepair",
      operations: "VocalRepairs",
      maxPerPage: config.MAX_PER_PAGE,
    },
    service,
    ctx,
  );
};

/** Vocal repairs: noise and room reverb removed from an uploaded vocal. */
export const vocalRepairApi: ApiKind<VocalRepairService> = {
  service: ({ config, prisma, ...deps }) =>
    new VocalRepairService({
      ...deps,
      repairs: new VocalRepairJobRepository(prisma),
      maxSeconds: config.MAX_SEPARATION_SECONDS,
      modelsDir: resolve(config.MODELS_DIR),
      settings: { vocals: config.SEPARATION_MODEL_VOCALS, vocalSplit: config.SEPARATION_MODEL_VOCAL_SPLIT },
    }),
  routes: vocalRepairRoutes,
};
