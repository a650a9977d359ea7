import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { AppContext } from "../../app-context.ts";
import { acceptUrlencodedForms } from "../../http/plain-form.ts";
import { jobReadRoutes } from "../../http/job-routes.ts";
import { badRequest, unprocessable } from "../../http/errors.ts";
import { bearerSecurity, CreateHeaders, createdRecord, errorResponses } from "../../http/schemas.ts";
import { jsonCreate } from "../../idempotency/create-request.ts";
import { jobOrigin, WebhookUrlField } from "../../jobs/job-origin.ts";
import { VoiceBlendJobRepository } from "@mixdown/db";
import type { ApiKind } from "../context.ts";
import { VoiceBlendService } from "./service.ts";

const ModelId = (description: string) => Type.Integer({ minimum: 1, maximum: 2147483647, description });
const Share = (description: string) => Type.Number({ minimum: 0, maximum: 1, description });

export const BlendBody = Type.Object({
  modelId1: ModelId("First voice model"),
  modelId2: ModelId("Second voice model"),
  modelId3: Type.Optional(ModelId("Third voice model")),
  modelId4: Type.Optional(ModelId("Fourth voice model (requires modelId3)")),
  alpha: Share("Share of the first model"),
  alpha2: Type.Optional(Share("Share of the second model; required with 3 or 4 models, not given with 2")),
  alpha3: Type.Optional(Share("Share of the third model; required with 4 models, not given with 2 or 3")),
  title: Type.Optional(
    Type.String({ maxLength: 200, description: 'Title of the new model; default "Blend of <title1> and <title2>"' }),
  ),
  webhookUrl: WebhookUrlField,
});

/** `/voice-blender`: create (JSON, or a urlencoded form of the same fields), list, fetch, cancel. */
const voiceBlendRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; service: VoiceBlendService }> = async (
  app,
  { ctx, service },
) => {
  const tags = ["Voice blender"];
  // Its fields are all numbers and text: a plain form may carry them (validation coerces the numbers).
  acceptUrlencodedForms(app, 64 * 1024);
  app.post(
    "/voice-blender",
    {
      schema: {
        tags,
        operationId: "createVoiceBlend",
        summary: "Blend two to four voice models into a new one",
        description:
          "One alpha fewer than models: the last share is computed as 1 minus the sum of the given ones (alpha2 with two models, alpha3 with three, alpha4 with four) and must not be negative. Models must be visible to the caller, usable, and share architecture and sample rate. The output model (outputModelId) is created at once in state `pending` and is usable once the job's status is `success`.",
        security: bearerSecurity,
        consumes: ["application/json", "application/x-www-form-urlencoded"],
        headers: CreateHeaders,
        body: BlendBody,
        response: { 201: createdRecord("VoiceBlendJob"), ...errorResponses(400, 401, 409, 413, 422, 429) },
      },
      preValidation: async (request) => {
        if (request.isMultipart() || typeof request.body !== "object" || request.body === null || Array.isArray(request.body)) {
          throw badRequest(
            "request body must be a JSON object (Content-Type: application/json) or a urlencoded form (application/x-www-form-urlencoded)",
          );
        }
        // Unknown fields are dropped by validation; these two would silently change the blend's meaning.
        const body = request.body as Record<string, unknown>;
        if ("alpha4" in body)
          throw unprocessable("alpha4 must not be given: the last share is computed as 1 minus the given alphas");
        const extraModel = Object.keys(body).find((k) => /^modelId([5-9]|\d{2,})$/.test(k));
        if (extraModel) throw unprocessable(`${extraModel}: at most four models can be blended`);
      },
    },
    (request, reply) =>
      jsonCreate(
        ctx,
        request,
        reply,
        { resource: "voice_blend", jobKind: "voice_blend", status: 201, current: (callerId, id) => service.get(callerId, id) },
        () => service.create(jobOrigin(request, request.body.webhookUrl, ctx.webhookPolicy), request.body),
      ),
  );

  jobReadRoutes(
    app,
    {
      path: "voice-blender",
      tags,
      noun: "voice blender",
      record: "VoiceBlendJob",
      operation: "VoiceBlend",
      maxPerPage: ctx.config.MAX_PER_PAGE,
      cancelNote: "Its output voice model ends `failed`.",
      deleteNote:
        "Its output voice model is the job's product and is deleted with it, as `DELETE /voice-models/{outputModelId}` does (which deletes this job too): with its files and the ended conversion and text-to-speech jobs that used it. 409 naming them while a running job uses that model.",
    },
    service,
  );
};

export const voiceBlendApi: ApiKind<VoiceBlendService> = {
  service: ({ prisma, voiceModels, submitter, cancels, deletions, presenter }) =>
    new VoiceBlendService({
      blends: new VoiceBlendJobRepository(prisma),
      models: voiceModels,
      submitter,
      cancels,
      deletions,
      presenter,
    }),
  routes: voiceBlendRoutes,
};
