import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type, type Static } from "typebox";
import { MAX_WEBHOOK_URL_LENGTH, urlLengthProblem } from "@mixdown/webhooks";
import { API_PREFIX, type AppContext } from "../app-context.ts";
import { paginationMeta } from "../http/pagination.ts";
import {
  alwaysSent,
  bearerSecurity,
  CreateHeaders,
  createdRecord,
  errorResponses,
  errorWithRetryAfter,
  IdParams,
  ListQuery,
  NoContent,
  pageOf,
} from "../http/schemas.ts";
import { jsonCreate, multipartCreate, type CreateRoute } from "../idempotency/create-request.ts";
import { acceptUrlencodedForms } from "../http/plain-form.ts";
import { listOf } from "@mixdown/records";
import { FilePart, FormSchema, type FieldFailure } from "../http/form-schema.ts";
import { documentOnly, TEXT_PARTS_AS_FILES } from "../http/multipart-route.ts";

/** An import's form: what the document shows and what a request is validated by. */
const importForm = Type.Object({
  metadata: Type.String({ description: "JSON object with title (required), tags, links and sampleRate" }),
  modelFile: Type.Optional(FilePart("RVC .pth, or ONNX voice model")),
  indexFile: Type.Optional(
    FilePart(
      "RVC's feature index for an RVC modelFile (the faiss IVF-Flat `.index` its training wrote, `added_IVF*_Flat_*.index`; MAX_VOICE_MODEL_INDEX_BYTES, 1 GB by default)",
    ),
  ),
  modelUrl: Type.Optional(
    Type.String({
      format: "uri",
      maxLength: MAX_WEBHOOK_URL_LENGTH,
      description:
        "Instead of modelFile: a link to the model, the way RVC voices are shared: a `.pth`, an RVC `.onnx`, or a `.zip` holding exactly one `.pth` (or `.onnx`) and at most one `.index` (folders, `__MACOSX/` and `.DS_Store` are ignored). A Hugging Face page link (`/blob/`) is taken as its download link (`/resolve/`). Absolute http(s), no credentials, at most 2048 characters, not a literal address in WEBHOOK_DENIED_NETWORKS (else 422); host names are checked on the address the download connects to. The answer is the model `pending`; the worker downloads it (at most MAX_VOICE_MODEL_UPLOAD_BYTES, also unpacked from a zip), refuses a zip entry leading out of its folder, and continues as for an uploaded file; the model ends `ready`, or `failed` with the reason as `errorMessage` (not found, too large, not a model, a bad zip, an address refused)",
    }),
  ),
  indexUrl: Type.Optional(
    Type.String({
      format: "uri",
      maxLength: MAX_WEBHOOK_URL_LENGTH,
      description:
        "With modelUrl only: a link to the model's feature index (`.index`, at most MAX_VOICE_MODEL_INDEX_BYTES), same rules as modelUrl. A zip at modelUrl that holds an index too ends the model `failed` naming both",
    }),
  ),
  referenceFile: Type.Optional(FilePart("Recording to build a native voice from")),
  image: Type.Optional(
    FilePart(
      "Cover image (PNG, JPEG or WebP, judged by its bytes; MAX_VOICE_MODEL_IMAGE_BYTES, 5 MB by default); without it the worker draws one",
    ),
  ),
});

/** A voice model import, as its form schema reads it. */
export type VoiceModelImportForm = Static<typeof importForm>;

/** `/voice-models`: list (public catalogue + own, or own only) and fetch. */
export const voiceModelRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const tags = ["Voice models"];
  // A link's length is refused in the words of every link the service follows (urlLengthProblem).
  const linkTooLong = { maxLength: ({ name }: FieldFailure) => urlLengthProblem(name) };
  const form = new FormSchema(importForm, {
    metadata: { required: () => 'metadata is required: a JSON object such as {"title": "My voice"}' },
    modelUrl: linkTooLong,
    indexUrl: linkTooLong,
  });
  // Enough for the text fields (metadata, links): a model itself needs the multipart form.
  acceptUrlencodedForms(app, 64 * 1024);
  app.get(
    "/voice-models",
    {
      schema: {
        tags,
        operationId: "listVoiceModels",
        summary: "List voice models: the public catalogue and the caller's own, or only the caller's own",
        description:
          "A page at a time, in id order. `myModels=true` lists only the caller's own models, `instruments=true` only instrument models; every query parameter is optional.",
        security: bearerSecurity,
        querystring: ListQuery(ctx.config.MAX_PER_PAGE, {
          myModels: Type.Optional(
            Type.Boolean({
              description: "true: only the caller's own models; otherwise the public catalogue and the caller's own",
            }),
          ),
          instruments: Type.Optional(
            Type.Boolean({
              description:
                "true: only instrument models (a performance in, an instrument's sound out); false: only voices; omitted: both",
            }),
          ),
        }),
        response: { 200: listOf("VoiceModel"), ...errorResponses(401, 422, 429) },
      },
    },
    async (request) => {
      const mine = request.query.myModels === true;
      const { instruments } = request.query;
      const page = pageOf(request.query);
      const { rows, total } = await ctx.models.list(request.auth.caller.id, mine, page, instruments);
      const filters = {
        ...(mine ? { myModels: "true" } : {}),
        ...(instruments === undefined ? {} : { instruments: String(instruments) }),
      };
      return { data: rows, meta: paginationMeta(`${API_PREFIX}/voice-models`, page, total, filters) };
    },
  );

  app.post(
    "/voice-models",
    {
      schema: {
        tags,
        operationId: "createVoiceModel",
        summary:
          "Import a private voice model: an RVC .pth or ONNX file (RVC or Mixdown native), a link to one, or a reference recording to build a native voice from",
        description:
          'Multipart form; an import by link (`modelUrl`, with `metadata` and an optional `indexUrl`), whose fields are all text, may also come as a urlencoded form (`curl -d`) or a JSON object of those fields. `metadata`: JSON object `{"title": ..., "tags": [...], "sampleRate": 40000|48000|32000 (RVC output rate), "imageUrl"/"demoUrl"/"twitterLink"/... }`. Exactly one of `modelUrl` (a link to a `.pth`, an RVC `.onnx` or a `.zip` of a `.pth` and its `.index`, downloaded by the worker: see the field), `modelFile` (an RVC `.pth` as RVC training exports it (v1/v2, 32/40/48 kHz, with or without f0): identified from its own config, answered `pending` and converted once by a `voice-model-build` job, then `ready` or `failed` with the reason; or ONNX whose signature is an RVC export or a Mixdown native voice model; anything else is a 422 and nothing is stored) or `referenceFile` (wav/mp3/flac speech or singing of the target voice, 10 s or more). With an RVC `modelFile`, an optional `indexFile`: the feature index RVC training wrote (faiss IVF-Flat, features as wide as the ContentVec output: 768 for v2). A conversion then blends each ContentVec frame with its 8 nearest training features (weights 1/d², as RVC does) at index rate = `conversionStrength` (more of the accent and pronunciation of the voice model, at the risk of mispronouncing); an index that is not an RVC IVF-Flat index is a 422 naming the problem, and nothing is stored. ' +
          TEXT_PARTS_AS_FILES,
        security: bearerSecurity,
        consumes: ["multipart/form-data", "application/x-www-form-urlencoded", "application/json"],
        headers: CreateHeaders,
        body: form.body,
        response: { 201: createdRecord("VoiceModel"), ...errorResponses(400, 401, 409, 413, 415, 422, 429) },
      },
      validatorCompiler: documentOnly,
    },
    (request, reply) => {
      // An import creates the model and queues the job that renders its demo and cover.
      const route: CreateRoute<{ id: number }> = {
        resource: "voice_model",
        jobKind: "voice_model_import",
        status: 201,
        current: (callerId, id) => ctx.models.get(callerId, id),
      };
      if (!request.isMultipart()) {
        // An import by link has text fields only: a urlencoded form (or a JSON object) carries them.
        const fields = form.fieldsOf(request.body);
        return jsonCreate(ctx, request, reply, route, () =>
          ctx.modelImports.import(request.auth.caller.id, form.read({ fields })),
        );
      }
      return multipartCreate(
        ctx,
        request,
        reply,
        {
          files: {
            modelFile: { maxBytes: ctx.config.MAX_VOICE_MODEL_UPLOAD_BYTES },
            indexFile: { maxBytes: ctx.config.MAX_VOICE_MODEL_INDEX_BYTES },
            referenceFile: { maxBytes: ctx.config.MAX_CONVERSION_UPLOAD_BYTES },
            image: { maxBytes: ctx.config.MAX_VOICE_MODEL_IMAGE_BYTES },
          },
          textFields: form.textFields,
        },
        route,
        (received) => ctx.modelImports.import(request.auth.caller.id, form.read(received)),
      );
    },
  );

  for (const media of ["image", "demo"] as const) {
    app.get(
      `/voice-models/:id/${media}`,
      {
        schema: {
          tags,
          operationId: media === "image" ? "getVoiceModelImage" : "getVoiceModelDemo",
          summary:
            media === "image"
              ? "Redirect to the voice model's cover image (PNG, or the owner's upload or link)"
              : "Redirect to the voice model's demo clip (mp3: the reference phrase converted with the voice)",
          description:
            "The URL a voice model record carries until the worker has rendered the media: 302 to a signed URL (or the owner's link) once it exists, 409 with Retry-After while it does not yet, 404 when it never will.",
          security: bearerSecurity,
          params: IdParams,
          response: {
            302: Type.Unsafe({
              type: "null",
              description: "The media's URL is in `Location`",
              headers: { Location: alwaysSent(Type.String({ format: "uri", description: "The media's URL" })) },
            }),
            ...errorResponses(401, 404, 429),
            409: errorWithRetryAfter("The media does not exist yet (the model is not ready, or the worker is rendering it)"),
          },
        },
      },
      async (request, reply) =>
        reply.redirect(await ctx.models.mediaLocation(request.auth.caller.id, request.params.id, media), 302),
    );
  }

  app.get(
    "/voice-models/:id",
    {
      schema: {
        tags,
        operationId: "getVoiceModel",
        summary: "Fetch one voice model",
        description:
          "A public (catalogue) voice model or one of the caller's own; 404 for another caller's. `usable` says whether conversions may use it yet (an imported or built model is `pending` until its worker job ends).",
        security: bearerSecurity,
        params: IdParams,
        response: { 200: Type.Ref("VoiceModel"), ...errorResponses(401, 404, 429) },
      },
    },
    (request) => ctx.models.get(request.auth.caller.id, request.params.id),
  );

  app.delete(
    "/voice-models/:id",
    {
      schema: {
        tags,
        operationId: "deleteVoiceModel",
        summary: "Delete one of the caller's voice models and its files",
        description:
          "Deletes one of the caller's own voice models for good: its files (model, index, cover, demo, the recording it was built from), the voice blender job that made it (cancelled first while running), and every ended voice conversion and text-to-speech job that used it, with their files: what was made in a voice goes with it, and a job record's `voiceModelId` always names a model. A blend that used it as an input keeps its own output model. Answers 204 with an empty body. 404 for a public (catalogue) model, another caller's, or one already deleted; 409 naming the jobs while a running job (conversion, text to speech, blend) uses it, or while the model is still being built. 503 with `Retry-After` while object storage cannot be reached: the deletion is finished by a retry or, within DELETION_RETRY_SECONDS, by the service itself.",
        security: bearerSecurity,
        params: IdParams,
        response: { 204: NoContent("Deleted: no body"), ...errorResponses(401, 404, 409, 429, 503) },
      },
    },
    async (request, reply) => {
      await ctx.models.delete(request.auth.caller.id, request.params.id);
      return reply.code(204).send();
    },
  );
};
