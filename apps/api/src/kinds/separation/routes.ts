import { resolve } from "node:path";
import { SeparationJobRepository } from "@mixdown/db";
import {
  FLAC_COMPRESSION_LEVELS,
  LOSSLESS_FORMATS,
  OUTPUT_SAMPLE_FORMATS,
  OUTPUT_SAMPLE_RATES,
  SEPARATION_KINDS,
  type SeparationDbKind,
} from "@mixdown/jobs";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type, type Static } from "typebox";
import type { AppContext } from "../../app-context.ts";
import { FilePart, FormSchema } from "../../http/form-schema.ts";
import { documentOnly } from "../../http/multipart-route.ts";
import { jobReadRoutes } from "../../http/job-routes.ts";
import { bearerSecurity, CreateHeaders, createdRecord, errorResponses } from "../../http/schemas.ts";
import { multipartCreate } from "../../idempotency/create-request.ts";
import { jobOrigin, WebhookUrlField } from "../../jobs/job-origin.ts";
import { ENSEMBLE_ALGORITHMS } from "@mixdown/separation/installed-models";
import type { ApiKind } from "../context.ts";
import { InstalledSeparationModels } from "./installed-models.ts";
import { SeparationService } from "./service.ts";

const KINDS: Array<{ path: string; kind: SeparationDbKind; tag: string; noun: string; operation: string }> = Object.values(
  SEPARATION_KINDS,
).map((k) => ({
  path: k.apiPath,
  kind: k.dbKind,
  tag: k.tag,
  noun: k.noun,
  // "vocal separation" -> VocalSeparation: createVocalSeparation, listVocalSeparations, ...
  operation: k.noun.replace(/(?:^| )(\w)/g, (_, c: string) => c.toUpperCase()),
}));

/** A vocal separation's or stem split's create form: what the document shows and what a request is validated by. */
export const separationForm = (maxMb: number) =>
  Type.Object({
    inputFile: FilePart(`wav, webm, mp3 or flac; max ${maxMb} MB`),
    webhookUrl: WebhookUrlField,
    model: Type.Optional(
      Type.String({
        description:
          "An installed separation model's name (`GET /separation-models`), or several, comma-separated (`vocals,stems`), run as an ensemble whose outputs are combined stem by stem (a stem split publishes the stems they have in common); default: the server's setting for the kind (SEPARATION_MODEL_VOCALS / SEPARATION_MODEL_STEMS)",
      }),
    ),
    ensemble: Type.Optional(
      Type.String({
        enum: [...ENSEMBLE_ALGORITHMS],
        description:
          "How an ensemble (a `model` naming two or more models) combines them: avg_wave (sample-wise mean, the default), median_wave, min_mag / max_mag (per STFT bin, the member with the smallest / largest magnitude), avg_mag (per bin, the complex mean), uvr_max_spec / uvr_min_spec (UVR's Max Spec / Min Spec). Refused (422) with a single model",
      }),
    ),
    analyze: Type.Optional(
      Type.Boolean({
        description:
          "Mixdown: `true` analyses the input and each stem once the separation is done (key, tempo and beats, loudness, duration: see `POST /audio-analyses`), in the record's `analysis`; default false, and the record then has no `analysis` key",
      }),
    ),
    ...outputFields,
  });

/**
 * Output control (issue 55): how the lossless files are written and which stems are kept. Each
 * field alone is checked by the schema; their combination, and whether the stems are ones the job
 * publishes, by the service, before anything is stored.
 */
const outputFields = {
  outputFormat: Type.Optional(
    Type.String({
      enum: [...LOSSLESS_FORMATS],
      description:
        "Mixdown: the lossless files' format, `wav` or `flac`; default the server's LOSSLESS_FORMAT (wav). The lossy mp3 files are unchanged",
    }),
  ),
  sampleFormat: Type.Optional(
    Type.String({
      enum: [...OUTPUT_SAMPLE_FORMATS],
      description:
        "Mixdown: the lossless files' samples: `s16` (16-bit), `s24` (24-bit) or `f32` (32-bit float, WAV only: 422 with FLAC); default f32 for WAV, s24 for FLAC",
    }),
  ),
  compressionLevel: Type.Optional(
    Type.Integer({
      minimum: FLAC_COMPRESSION_LEVELS.minimum,
      maximum: FLAC_COMPRESSION_LEVELS.maximum,
      description: `Mixdown: FLAC's compression level, 0 (fastest) to 12 (smallest), as ffmpeg's flac encoder takes it; default ${FLAC_COMPRESSION_LEVELS.default}. FLAC only (422 with WAV); the samples are the same at every level`,
    }),
  ),
  sampleRate: Type.Optional(
    Type.Integer({
      minimum: OUTPUT_SAMPLE_RATES[0],
      maximum: OUTPUT_SAMPLE_RATES[OUTPUT_SAMPLE_RATES.length - 1],
      description: `Mixdown: the lossless files' sample rate in Hz, one of ${OUTPUT_SAMPLE_RATES.join(", ")} (resampled with soxr); default the input's rate. The mp3 files keep the input's rate`,
    }),
  ),
  stems: Type.Optional(
    Type.String({
      description:
        "Mixdown: the stems to keep, comma-separated, by the names the record's `stemFileUrls` give them (`vocals,backing`; a vocal separation's are vocals, harmony, reverb and backing, a stem split's its model's stems: `GET /separation-models`); default all. With `stems`, the vocal URLs come only with `vocals` and the backing URL only with `backing`. A vocal separation keeping none of vocals, harmony and reverb skips the vocal split; other stems not kept are computed (the networks output every stem in one pass) but not stored. 422 names unknown stems and the valid ones",
    }),
  ),
};

/** The output options' names: how a separation's files are written, not what it separates (a pipeline's `separate` step takes none). */
export const SEPARATION_OUTPUT_FIELDS = Object.keys(outputFields);

/** The separation form's own wording of its fields' failures (a pipeline's `separate` step says the same). */
export const SEPARATION_FIELD_MESSAGES = {
  ensemble: {
    enum: ({ raw }: { raw?: string }) =>
      `ensemble ${JSON.stringify(raw)} is not an ensemble algorithm (one of ${ENSEMBLE_ALGORITHMS.join(", ")})`,
  },
};

/** A separation's create, as its form schema reads it. */
export type SeparationForm = Static<ReturnType<typeof separationForm>>;

const sampleRateMessage = (raw: string | undefined) =>
  `sampleRate ${raw?.trim()} is not an output rate (one of ${OUTPUT_SAMPLE_RATES.join(", ")} Hz)`;

/** `/vocal-separations` and `/stem-splits`: create (multipart), list, fetch, cancel. */
const separationRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; service: SeparationService }> = async (
  app,
  { ctx, service },
) => {
  const { config } = ctx;
  const maxMb = Math.round(config.MAX_SEPARATION_UPLOAD_BYTES / 1024 / 1024);
  const form = new FormSchema(separationForm(maxMb), {
    inputFile: { required: () => "inputFile is required (a wav, webm, mp3 or flac file part)" },
    sampleRate: {
      type: ({ raw }) =>
        `sampleRate must be a whole number of Hz, one of ${OUTPUT_SAMPLE_RATES.join(", ")} (got ${JSON.stringify(raw)})`,
      minimum: ({ raw }) => sampleRateMessage(raw),
      maximum: ({ raw }) => sampleRateMessage(raw),
    },
    ensemble: SEPARATION_FIELD_MESSAGES.ensemble,
  });
  app.get(
    "/separation-models",
    {
      schema: {
        tags: ["Separation models"],
        operationId: "listSeparationModels",
        summary: "List the installed separation models",
        description:
          "The models a vocal separation or stem split may name in its `model` field, read from the manifests in MODELS_DIR.",
        security: bearerSecurity,
        response: { 200: Type.Object({ data: Type.Array(Type.Ref("SeparationModel")) }), ...errorResponses(401, 429) },
      },
    },
    async () => ({ data: await service.listModels() }),
  );

  for (const { path, kind, tag, noun, operation } of KINDS) {
    app.post(
      `/${path}`,
      {
        schema: {
          tags: [tag],
          operationId: `create${operation}`,
          summary: `Create a ${noun} job and queue it`,
          description: `Multipart form with one file part \`inputFile\`: wav, webm, mp3 or flac (decided from the bytes), at most ${maxMb} MB; optional text fields \`webhookUrl\`, \`model\` (an installed separation model's name, or several comma-separated for an ensemble; 422 lists the installed ones when one is unknown or cannot serve a ${noun}) \`ensemble\` (the algorithm combining an ensemble's models, default avg_wave), \`analyze\` (\`true\`: the input and each stem analysed too, in the record's \`analysis\`), and output control: \`outputFormat\`, \`sampleFormat\`, \`compressionLevel\`, \`sampleRate\`, \`stems\` (a combination that cannot be written, or a stem the job does not publish, is a 422 naming it; the record's \`output\` says what was written).`,
          security: bearerSecurity,
          consumes: ["multipart/form-data"],
          headers: CreateHeaders,
          body: form.body,
          response: { 200: createdRecord("SeparationJob"), ...errorResponses(400, 401, 409, 413, 415, 422, 429) },
        },
        validatorCompiler: documentOnly,
      },
      (request, reply) =>
        multipartCreate(
          ctx,
          request,
          reply,
          { files: { inputFile: { maxBytes: config.MAX_SEPARATION_UPLOAD_BYTES } }, textFields: form.textFields },
          { resource: kind, jobKind: kind, status: 200, current: (callerId, id) => service.jobs[kind].get(callerId, id) },
          (received) =>
            service.create(jobOrigin(request, received.fields.get("webhookUrl"), ctx.webhookPolicy), kind, form.read(received)),
        ),
    );

    jobReadRoutes(
      app,
      { path, tags: [tag], noun, record: "SeparationJob", recordKind: kind, operation, maxPerPage: config.MAX_PER_PAGE },
      service.jobs[kind],
      ctx,
    );
  }
};

/** The installed separation models as the settings name the kinds' defaults (separations and pipelines read them). */
export const installedSeparationModels = (config: AppContext["config"]) =>
  new InstalledSeparationModels(resolve(config.MODELS_DIR), {
    vocalSeparation: config.SEPARATION_MODEL_VOCALS,
    stemSplit: config.SEPARATION_MODEL_STEMS,
    vocalSplit: config.SEPARATION_MODEL_VOCAL_SPLIT,
  });

/** Vocal separations and stem splits (one table, two kinds), with the installed models they may name. */
export const separationApi: ApiKind<SeparationService> = {
  service: ({ config, prisma, ...deps }) =>
    new SeparationService({
      ...deps,
      separations: new SeparationJobRepository(prisma),
      models: installedSeparationModels(config),
      maxSeconds: config.MAX_SEPARATION_SECONDS,
      losslessFormat: config.LOSSLESS_FORMAT,
    }),
  routes: separationRoutes,
};
