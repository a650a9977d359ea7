import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type, type Static } from "typebox";
import type { AppContext } from "../../app-context.ts";
import { FilePart, FormSchema } from "../../http/form-schema.ts";
import { TEXT_PARTS_AS_FILES } from "../../http/multipart-route.ts";
import { jobReadRoutes, multipartJobCreateRoute } from "../../http/job-routes.ts";
import { CONVERSION_CONTROLS } from "@mixdown/voice/conversion-params";
import { VoiceModelIdField, WebhookUrlField } from "../../jobs/job-origin.ts";
import { VoiceConversionJobRepository } from "@mixdown/db";
import type { ApiKind } from "../context.ts";
import { documentedEffectName, POST_EFFECTS, PRE_EFFECTS } from "./effects.ts";
import { VoiceConversionService } from "./service.ts";

const describeEffects = (effects: Record<string, Record<string, { min: number; max: number }>>) =>
  Object.entries(effects)
    .map(
      ([name, params]) =>
        `\`${name}\` or \`${documentedEffectName(name)}\` {${Object.entries(params)
          .map(([p, r]) => `${p} ${r.min}..${r.max}`)
          .join(", ")}}`,
    )
    .join("; ");

/** A conversion's create form: what the document shows and what a request is validated by. */
export const conversionForm = (maxMb: number) =>
  Type.Object({
    voiceModelId: VoiceModelIdField("Id of a ready voice model: public or the caller's own"),
    soundFile: FilePart(`wav, mp3 or flac; max ${maxMb} MB`),
    conversionStrength: Type.Optional(
      Type.Number({
        minimum: CONVERSION_CONTROLS.conversionStrength.min,
        maximum: CONVERSION_CONTROLS.conversionStrength.max,
        default: CONVERSION_CONTROLS.conversionStrength.default,
        description:
          "Higher values add more accent from the voice model and may cause mispronunciation. Native voices: how far the timbre moves toward the target (0 = the input's own). RVC models imported with their feature index: RVC's index rate (each ContentVec frame blended with its 8 nearest training features by this share). RVC models without an index: a blend of the converted voice with the input.",
      }),
    ),
    modelVolumeMix: Type.Optional(
      Type.Number({
        minimum: CONVERSION_CONTROLS.modelVolumeMix.min,
        maximum: CONVERSION_CONTROLS.modelVolumeMix.max,
        default: CONVERSION_CONTROLS.modelVolumeMix.default,
      }),
    ),
    pitchShift: Type.Optional(
      Type.Number({
        minimum: CONVERSION_CONTROLS.pitchShift.min,
        maximum: CONVERSION_CONTROLS.pitchShift.max,
        default: CONVERSION_CONTROLS.pitchShift.default,
        description: "Semitones",
      }),
    ),
    pre: Type.Optional(Type.String({ description: "JSON object of preprocessing effects" })),
    post: Type.Optional(Type.String({ description: "JSON object of postprocessing effects" })),
    backingSoundFile: Type.Optional(
      FilePart("Optional backing track: the converted voice is mixed onto it (recombinedAudioFileUrl)"),
    ),
    webhookUrl: WebhookUrlField,
  });

/** A conversion's create, as its form schema reads it. */
export type ConversionForm = Static<ReturnType<typeof conversionForm>>;

/** `/voice-conversions`: create (multipart), list, fetch. */
const voiceConversionRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; service: VoiceConversionService }> = async (
  app,
  { ctx, service },
) => {
  const { config } = ctx;
  const maxBytes = config.MAX_CONVERSION_UPLOAD_BYTES;
  const maxMb = Math.round(maxBytes / 1024 / 1024);
  const tags = ["Voice conversions"];
  const form = new FormSchema(conversionForm(maxMb), {
    soundFile: { required: () => "soundFile is required (a wav, mp3 or flac file part)" },
  });

  multipartJobCreateRoute(app, ctx, {
    path: "voice-conversions",
    tags,
    operationId: "createVoiceConversion",
    summary: "Create a voice conversion (inference) job and queue it",
    description: `Multipart form. \`soundFile\`: wav, mp3 or flac (no webm), at most ${maxMb} MB, decided from the bytes. \`pre\` and \`post\` are JSON objects sent as strings, keyed by effect, e.g. \`{"noiseGate":{"threshold_db":-40}}\` or, as the hosted documentation spells effects, \`{"NoiseGate":{"threshold_db":-40}}\` (either spelling is accepted; one effect given in both is refused). Pre effects: ${describeEffects(PRE_EFFECTS)}. Post effects: ${describeEffects(POST_EFFECTS)}. Omitted parameters take their defaults. ${TEXT_PARTS_AS_FILES}`,
    form,
    files: { soundFile: { maxBytes }, backingSoundFile: { maxBytes } },
    record: "VoiceConversionJob",
    status: 201,
    kind: "voice_conversion",
    service,
  });

  jobReadRoutes(
    app,
    {
      path: "voice-conversions",
      tags,
      noun: "voice conversion",
      record: "VoiceConversionJob",
      recordKind: "voice_conversion",
      operation: "VoiceConversion",
      maxPerPage: config.MAX_PER_PAGE,
    },
    service,
    ctx,
  );
};

export const voiceConversionApi: ApiKind<VoiceConversionService> = {
  service: ({ config, prisma, voiceModels, voiceAssets, ...deps }) =>
    new VoiceConversionService({
      ...deps,
      conversions: new VoiceConversionJobRepository(prisma),
      models: voiceModels,
      assets: voiceAssets,
      maxSeconds: config.MAX_CONVERSION_SECONDS,
    }),
  routes: voiceConversionRoutes,
};
