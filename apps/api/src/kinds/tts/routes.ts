import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { Type, type Static } from "typebox";
import type { AppContext } from "../../app-context.ts";
import { acceptUrlencodedForms } from "../../http/plain-form.ts";
import { describeFieldFailure, FormSchema } from "../../http/form-schema.ts";
import { documentOnly } from "../../http/multipart-route.ts";
import { jobReadRoutes } from "../../http/job-routes.ts";
import { bearerSecurity, CreateHeaders, createdRecord, errorResponses } from "../../http/schemas.ts";
import { jsonCreate, multipartCreate, type CreateRoute } from "../../idempotency/create-request.ts";
import { jobOrigin, VoiceModelIdField, WebhookUrlField } from "../../jobs/job-origin.ts";
import { resolve } from "node:path";
import { TtsJobRepository } from "@mixdown/db";
import { installedLanguages } from "@mixdown/voice/speech-synthesizers";
import type { ApiKind } from "../context.ts";
import { TtsService } from "./service.ts";

/** A text-to-speech create's fields: what the document shows and what a request is validated by. */
const ttsForm = (maxChars: number) =>
  Type.Object({
    voiceModelId: VoiceModelIdField("Id of a ready voice model (public or the caller's own) that speaks the text"),
    inputTtsText: Type.String({
      minLength: 1,
      maxLength: maxChars,
      description: `The text to speak: at most ${maxChars} characters (MAX_TTS_TEXT_CHARS), with at least one letter or digit`,
    }),
    language: Type.Optional(
      Type.String({
        description:
          "Mixdown: the language of the text (a tag as espeak-ng names its voices: en, en-gb, de, fr, pt-br, cmn, ...; case does not matter). Absent: English. A Piper voice installed for the language speaks it (`models pull piper-...`); else English (en, en-us) is spoken by Festival's voice, every other language by espeak-ng's voice for it; a language no synthesizer on the server speaks is a 422 that lists those it does",
      }),
    ),
    webhookUrl: WebhookUrlField,
  });

/** A text-to-speech create, as its form schema reads it. */
export type TtsForm = Static<ReturnType<typeof ttsForm>>;

/** `/tts`: create (multipart, urlencoded or JSON form fields), list, fetch, cancel. */
const ttsRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; service: TtsService }> = async (app, { ctx, service }) => {
  const maxChars = ctx.config.MAX_TTS_TEXT_CHARS;
  const tags = ["Text to speech"];
  const form = new FormSchema(ttsForm(maxChars), {
    inputTtsText: {
      required: () => "inputTtsText is required: the text to speak",
      minLength: () => "inputTtsText is empty: there is no text to speak",
      maxLength: (failure) => `${describeFieldFailure(failure)} (MAX_TTS_TEXT_CHARS)`,
    },
  });
  // Python requests' `data={...}` sends the fields urlencoded; only this plugin's routes read such bodies.
  acceptUrlencodedForms(app, maxChars * 12 + 64 * 1024);

  const route: CreateRoute<{ id: number }> = {
    resource: "tts",
    jobKind: "tts",
    status: 201,
    current: (callerId, id) => service.get(callerId, id),
  };
  const origin = (request: FastifyRequest, fields: ReadonlyMap<string, string>) =>
    jobOrigin(request, fields.get("webhookUrl"), ctx.webhookPolicy);

  app.post(
    "/tts",
    {
      schema: {
        tags,
        operationId: "createTextToSpeechJob",
        summary: "Create a text-to-speech (inference) job and queue it",
        description: `The text is spoken by the server's base synthesizer (a Piper voice for the language where one is installed, else Festival's HTS voice cmu_us_slt_arctic_hts for English, else espeak-ng; see TTS_SYNTHESIZER), then converted with the voice model as a voice conversion with the default options is: the record's outputs are the text in that voice. The fields may come as a multipart form, a urlencoded form or a JSON object. \`inputTtsText\`: at most ${maxChars} characters (MAX_TTS_TEXT_CHARS); empty or whitespace-only text, or text without a letter or digit, is a 422. Long text is spoken sentence by sentence. In a multipart form the fields may also be sent as file parts (as Python requests' \`files=\` and curl's \`-F name=@file\` do): UTF-8 text, up to ${maxChars * 4} bytes each, read as the field's value.`,
        security: bearerSecurity,
        consumes: ["multipart/form-data", "application/x-www-form-urlencoded", "application/json"],
        headers: CreateHeaders,
        body: form.body,
        response: { 201: createdRecord("TtsJob"), ...errorResponses(400, 401, 409, 413, 415, 422, 429) },
      },
      validatorCompiler: documentOnly,
    },
    (request, reply) =>
      request.isMultipart()
        ? multipartCreate(
            ctx,
            request,
            reply,
            { files: {}, textFields: form.textFields, textFileMaxBytes: maxChars * 4 },
            route,
            (received) => service.create(origin(request, received.fields), form.read(received)),
          )
        : jsonCreate(ctx, request, reply, route, () => {
            const fields = form.fieldsOf(request.body);
            return service.create(origin(request, fields), form.read({ fields }));
          }),
  );

  jobReadRoutes(
    app,
    {
      path: "tts",
      tags,
      noun: "text-to-speech",
      record: "TtsJob",
      operation: "TextToSpeechJob",
      maxPerPage: ctx.config.MAX_PER_PAGE,
    },
    service,
  );
};

export const ttsApi: ApiKind<TtsService> = {
  service: ({ config, prisma, voiceModels, voiceAssets, ...deps }) =>
    new TtsService({
      ...deps,
      tts: new TtsJobRepository(prisma),
      models: voiceModels,
      assets: voiceAssets,
      languages: () => installedLanguages(resolve(config.MODELS_DIR, config.TTS_PIPER_DIR)),
    }),
  routes: ttsRoutes,
};
