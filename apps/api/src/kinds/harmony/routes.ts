import { resolve } from "node:path";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { HarmonyJobRepository } from "@mixdown/db";
import { HARMONY_DIRECTIONS, HARMONY_INTERVALS } from "@mixdown/jobs";
import { Type, type Static } from "typebox";
import type { AppContext } from "../../app-context.ts";
import { FilePart, FormSchema } from "../../http/form-schema.ts";
import { jobReadRoutes, multipartJobCreateRoute } from "../../http/job-routes.ts";
import { WebhookUrlField } from "../../jobs/job-origin.ts";
import type { ApiKind } from "../context.ts";
import { HarmonyService } from "./service.ts";

/** A harmony's create form: what the document shows and what a request is validated by. */
export const harmonyForm = (maxMb: number) =>
  Type.Object({
    inputFile: FilePart(`The lead vocal (or a mix, with isolateVocal): wav, webm, mp3 or flac; max ${maxMb} MB`),
    key: Type.Optional(
      Type.String({
        maxLength: 20,
        description:
          "The key the harmony is in: a tonic (a letter with `#` or `b`) and `major` or `minor` (`A minor`, `F# major`, `Bb major`; any case, `maj`/`min` too). Minor is the natural minor. Default: the worker finds the key in the upload with the audio analysis (Essentia's KeyExtractor); the record says which key was used and whether it was given or found",
      }),
    ),
    interval: Type.Optional(
      Type.String({
        enum: [...HARMONY_INTERVALS],
        default: "third",
        description:
          "The harmony's interval, counted on the key's scale from each sung note: `third` (two scale steps: 3 or 4 semitones, as the degree has it) or `sixth` (five steps: 8 or 9); a note off the scale is snapped to the nearest scale note first. Default third",
      }),
    ),
    direction: Type.Optional(
      Type.String({
        enum: [...HARMONY_DIRECTIONS],
        default: "above",
        description: "Whether the harmony sings `above` or `below` the lead; default above",
      }),
    ),
    isolateVocal: Type.Optional(
      Type.Boolean({
        description:
          "`true`: the input is a mix; its vocal is isolated first by the vocal separation (the server's SEPARATION_MODEL_VOCALS, as a vocal separation that names no model), the harmony follows it and the mix file is the upload with the harmony under it; default false (the input is a vocal)",
      }),
    ),
    webhookUrl: WebhookUrlField,
  });

/** A harmony's create, as its form schema reads it. */
export type HarmonyForm = Static<ReturnType<typeof harmonyForm>>;

/** `/harmonies`: create (multipart), list, fetch, cancel, delete. */
const harmonyRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; service: HarmonyService }> = async (app, { ctx, service }) => {
  const { config } = ctx;
  const maxMb = Math.round(config.MAX_SEPARATION_UPLOAD_BYTES / 1024 / 1024);
  const tags = ["Harmonies"];
  const form = new FormSchema(harmonyForm(maxMb), {
    inputFile: { required: () => "inputFile is required (a wav, webm, mp3 or flac file part)" },
  });
  multipartJobCreateRoute(app, ctx, {
    path: "harmonies",
    tags,
    operationId: "createHarmony",
    summary: "Create a harmony job and queue it",
    description: `Mixdown: a harmony voice for a lead vocal, a third or a sixth \`above\` or \`below\` it in a key, note by note: the vocal's pitch track (YIN) cut into notes, each note's diatonic target on the key's scale, each note shifted by its own amount with its formants preserved (ffmpeg's rubberband). Multipart form with one file part \`inputFile\`: wav, webm, mp3 or flac (decided from the bytes), at most ${maxMb} MB (MAX_SEPARATION_UPLOAD_BYTES) and MAX_SEPARATION_SECONDS long, as a separation's; text fields \`key\` (default: found by the worker), \`interval\`, \`direction\`, \`isolateVocal\`, \`webhookUrl\`. A key that is not a tonic and major or minor, or an unknown interval or direction, is a 422 naming the field; \`isolateVocal\` is refused (422) when the server has no vocal separation model. The record has the harmony alone (\`harmonyFileUrl\`, \`lossyHarmonyFileUrl\`) and the upload with the harmony under it (\`mixFileUrl\`, \`lossyMixFileUrl\`), at the input's rate, lossless (LOSSLESS_FORMAT) and mp3.`,
    form,
    files: { inputFile: { maxBytes: config.MAX_SEPARATION_UPLOAD_BYTES } },
    record: "HarmonyJob",
    status: 200,
    kind: "harmony",
    service,
  });

  jobReadRoutes(
    app,
    {
      path: "harmonies",
      tags,
      noun: "harmony",
      record: "HarmonyJob",
      recordKind: "harmony",
      operation: "Harmony",
      operations: "Harmonies",
      maxPerPage: config.MAX_PER_PAGE,
    },
    service,
    ctx,
  );
};

/** Harmonies: a harmony voice a third or a sixth from an uploaded vocal, in key. */
export const harmonyApi: ApiKind<HarmonyService> = {
  service: ({ config, prisma, ...deps }) =>
    new HarmonyService({
      ...deps,
      harmonies: new HarmonyJobRepository(prisma),
      maxSeconds: config.MAX_SEPARATION_SECONDS,
      modelsDir: resolve(config.MODELS_DIR),
      settings: { vocals: config.SEPARATION_MODEL_VOCALS },
    }),
  routes: harmonyRoutes,
};
