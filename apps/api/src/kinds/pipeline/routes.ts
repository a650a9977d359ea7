import { resolve } from "node:path";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { PipelineRepository } from "@mixdown/db";
import { PIPELINE_PRESET_NAMES, PIPELINE_STEP_NAMES } from "@mixdown/jobs";
import { Type, type Static } from "typebox";
import type { AppContext } from "../../app-context.ts";
import { FilePart, FormSchema } from "../../http/form-schema.ts";
import { jobReadRoutes, multipartJobCreateRoute } from "../../http/job-routes.ts";
import { bearerSecurity, errorResponses } from "../../http/schemas.ts";
import { VoiceModelIdField, WebhookUrlField } from "../../jobs/job-origin.ts";
import type { ApiKind } from "../context.ts";
import { installedSeparationModels } from "../separation/routes.ts";
import { describeStepOptions, PipelineService } from "./service.ts";
import { MAX_PIPELINE_STEPS } from "./steps.ts";

/** A pipeline's create form: what the document shows and what a request is validated by. */
const pipelineForm = (maxMb: number) =>
  Type.Object({
    inputFile: FilePart(`wav, webm, mp3 or flac (no webm when the first step is a convert); max ${maxMb} MB`),
    steps: Type.Optional(
      Type.String({
        description: `A JSON array of at most ${MAX_PIPELINE_STEPS} steps, each \`{ "step": ${PIPELINE_STEP_NAMES.map((s) => `"${s}"`).join(" | ")}, ...its options }\`; or give \`preset\``,
        examples: ['[{"step":"separate"},{"step":"convert","voiceModelId":1,"pitchShift":2},{"step":"recombine"}]'],
      }),
    ),
    preset: Type.Optional(
      Type.String({
        enum: [...PIPELINE_PRESET_NAMES],
        description: "A preset's name (`GET /pipeline-presets`); or give `steps`",
      }),
    ),
    input: Type.Optional(
      Type.String({
        enum: ["mix", "vocal"],
        default: "mix",
        description:
          "What `inputFile` is: `mix` (a song, the default) or `vocal` (a vocal alone, which a first `repair` or `convert` takes)",
      }),
    ),
    voiceModelId: Type.Optional(
      VoiceModelIdField(
        "With a preset that converts (`cover`, `vocal-swap`, `cover-mastered`): the voice model its convert step uses",
      ),
    ),
    webhookUrl: WebhookUrlField,
  });

/** A pipeline's create, as its form schema reads it. */
export type PipelineForm = Static<ReturnType<typeof pipelineForm>>;

const PresetRecord = Type.Object({
  name: Type.String(),
  description: Type.String(),
  input: Type.Union([Type.Literal("mix"), Type.Literal("vocal")], { description: "What the preset's input is" }),
  steps: Type.Array(Type.Object({ step: Type.String(), options: Type.Record(Type.String(), Type.Unknown()) }), {
    description: "The steps it runs, with the options it fixes",
  }),
  requires: Type.Array(Type.String(), { description: "The create's fields it needs besides `inputFile` (`voiceModelId`)" }),
});

/** `/pipelines`: create (multipart), list, fetch, cancel, delete; `/pipeline-presets`. */
const pipelineRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; service: PipelineService }> = async (
  app,
  { ctx, service },
) => {
  const { config } = ctx;
  const maxBytes = config.MAX_SEPARATION_UPLOAD_BYTES;
  const maxMb = Math.round(maxBytes / 1024 / 1024);
  const tags = ["Pipelines"];
  const form = new FormSchema(pipelineForm(maxMb), {
    inputFile: { required: () => "inputFile is required (a wav, webm, mp3 or flac file part)" },
    preset: {
      enum: ({ raw }) => `preset ${JSON.stringify(raw)} is not a preset (one of ${PIPELINE_PRESET_NAMES.join(", ")})`,
    },
  });

  app.get(
    "/pipeline-presets",
    {
      schema: {
        tags,
        operationId: "listPipelinePresets",
        summary: "List the pipeline presets with their steps",
        description:
          "Mixdown: the named chains `POST /pipelines` takes as `preset`, each with the steps it runs, the options it fixes, what its input is and the create's fields it needs (`voiceModelId` for a preset that converts).",
        security: bearerSecurity,
        response: { 200: Type.Object({ data: Type.Array(PresetRecord) }), ...errorResponses(401, 429) },
      },
    },
    async () => ({ data: service.presets() }),
  );

  multipartJobCreateRoute(app, ctx, {
    path: "pipelines",
    tags,
    operationId: "createPipeline",
    summary: "Create a pipeline: steps chained on one input, each run as an ordinary job",
    description: `Mixdown: multipart form with one file part \`inputFile\` and either \`steps\` (a JSON array) or \`preset\`. Steps and their options, each checked as the kind's own create checks them (a 422 names the step's index): ${describeStepOptions()}. The chain is typed: a \`repair\` or a \`convert\` takes a vocal, so it follows a \`separate\` (or another vocal step) or comes first with \`input=vocal\`; a \`master\` takes a mix: the input (\`input=mix\`) or a \`recombine\`'s. Each step runs as an ordinary job (its record, with its outputs' signed URLs, at \`GET /<jobKind>/<jobId>\` of the step); \`progress\` is the whole chain's; a cancel stops the running step and runs no later one; a failed step fails the pipeline, its \`errorMessage\` naming the step. The webhook is sent when the pipeline ends. \`DELETE /pipelines/{id}\` deletes the jobs its steps ran as too, with their files.`,
    form,
    files: { inputFile: { maxBytes } },
    record: "Pipeline",
    status: 201,
    kind: "pipeline",
    service,
  });

  jobReadRoutes(
    app,
    {
      path: "pipelines",
      tags,
      noun: "pipeline",
      record: "Pipeline",
      recordKind: "pipeline",
      operation: "Pipeline",
      maxPerPage: config.MAX_PER_PAGE,
      cancelNote: "The running step's job is cancelled too; no later step runs.",
    },
    service,
    ctx,
  );
};

/** Pipelines: chains of separations, vocal repairs, conversions and masterings on one upload. */
export const pipelineApi: ApiKind<PipelineService> = {
  service: ({ config, prisma, voiceModels, voiceAssets, ...deps }) =>
    new PipelineService({
      ...deps,
      pipelines: new PipelineRepository(prisma),
      separationModels: installedSeparationModels(config),
      repairModels: {
        modelsDir: resolve(config.MODELS_DIR),
        settings: { vocals: config.SEPARATION_MODEL_VOCALS, vocalSplit: config.SEPARATION_MODEL_VOCAL_SPLIT },
      },
      models: voiceModels,
      assets: voiceAssets,
      maxSeconds: { separation: config.MAX_SEPARATION_SECONDS, conversion: config.MAX_CONVERSION_SECONDS },
    }),
  routes: pipelineRoutes,
};
