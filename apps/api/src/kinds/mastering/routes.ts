import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { MasteringJobRepository } from "@mixdown/db";
import { LOUDNESS_TARGET_DEFAULTS, LOUDNESS_TARGET_RANGES, MATCHERING_DEFAULTS } from "@mixdown/mastering/config";
import { Type, type Static } from "typebox";
import type { AppContext } from "../../app-context.ts";
import { FilePart, FormSchema } from "../../http/form-schema.ts";
import { TEXT_PARTS_AS_FILES } from "../../http/multipart-route.ts";
import { jobReadRoutes, multipartJobCreateRoute } from "../../http/job-routes.ts";
import { WebhookUrlField } from "../../jobs/job-origin.ts";
import type { ApiKind } from "../context.ts";
import { MasteringService } from "./service.ts";

const { integratedLufs: lufsRange, truePeakDb: peakRange } = LOUDNESS_TARGET_RANGES;

/** A mastering's create form: what the document shows and what a request is validated by (a pipeline's `master` step takes its loudness fields). */
export const masteringForm = (maxMb: number) =>
  Type.Object({
    targetFile: FilePart(`The track to master: wav, webm, mp3 or flac; max ${maxMb} MB`),
    referenceFile: Type.Optional(
      FilePart(
        `Reference mastering: the track whose loudness, frequency response, peak and stereo width the target is matched to (Matchering); wav, webm, mp3 or flac, max ${maxMb} MB. Give this or a loudness target, not both`,
      ),
    ),
    targetLufs: Type.Optional(
      Type.Number({
        ...lufsRange,
        default: LOUDNESS_TARGET_DEFAULTS.integratedLufs,
        description:
          "Loudness mode: the integrated loudness to reach, LUFS (EBU R128; -14 is the streaming services' usual target). Giving it or `truePeakDb` chooses the loudness mode; the one not given takes its default",
      }),
    ),
    truePeakDb: Type.Optional(
      Type.Number({
        ...peakRange,
        default: LOUDNESS_TARGET_DEFAULTS.truePeakDb,
        description: "Loudness mode: the true peak ceiling, dBTP",
      }),
    ),
    webhookUrl: WebhookUrlField,
  });

/** A mastering's create, as its form schema reads it. */
export type MasteringForm = Static<ReturnType<typeof masteringForm>>;

/** `/masterings`: create (multipart), list, fetch, cancel, delete. */
const masteringRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; service: MasteringService }> = async (
  app,
  { ctx, service },
) => {
  const { config } = ctx;
  const maxBytes = config.MAX_SEPARATION_UPLOAD_BYTES;
  const maxMb = Math.round(maxBytes / 1024 / 1024);
  const tags = ["Masterings"];
  const form = new FormSchema(masteringForm(maxMb), {
    targetFile: { required: () => "targetFile is required (a wav, webm, mp3 or flac file part)" },
  });
  const matcheringMinutes = MATCHERING_DEFAULTS.maxLength / 60;
  multipartJobCreateRoute(app, ctx, {
    path: "masterings",
    tags,
    operationId: "createMastering",
    summary: "Create a mastering job and queue it",
    description: `Mixdown: masters \`targetFile\` in one of two modes. **Reference** (\`referenceFile\` given): Matchering's algorithm with its defaults (the target matched to the reference's RMS, frequency response, peak amplitude and stereo width, then its brickwall limiter), the output 44.1 kHz stereo; both tracks at most ${matcheringMinutes} minutes. **Loudness** (\`targetLufs\` and/or \`truePeakDb\` given, default ${LOUDNESS_TARGET_DEFAULTS.integratedLufs} LUFS and ${LOUDNESS_TARGET_DEFAULTS.truePeakDb} dBTP): ffmpeg's two-pass \`loudnorm\`, one linear gain where the true peak allows (else loudnorm's dynamic mode; \`processor\` says which), at the target's own rate and channels. A reference and a loudness target together, or neither, is a 422. Multipart form; files wav, webm, mp3 or flac (decided from the bytes), at most ${maxMb} MB (MAX_SEPARATION_UPLOAD_BYTES) and MAX_SEPARATION_SECONDS long; optional text field \`webhookUrl\`. ${TEXT_PARTS_AS_FILES} The record has the master as 24-bit and 16-bit WAV and mp3, and the target's and the master's loudness (integrated, range, true peak).`,
    form,
    files: { targetFile: { maxBytes }, referenceFile: { maxBytes } },
    record: "MasteringJob",
    status: 201,
    kind: "mastering",
    service,
  });

  jobReadRoutes(
    app,
    {
      path: "masterings",
      tags,
      noun: "mastering",
      record: "MasteringJob",
      recordKind: "mastering",
      operation: "Mastering",
      maxPerPage: config.MAX_PER_PAGE,
    },
    service,
    ctx,
  );
};

/** Masterings: a track mastered to a reference track or to a loudness target. */
export const masteringApi: ApiKind<MasteringService> = {
  service: ({ config, prisma, ...deps }) =>
    new MasteringService({
      ...deps,
      masterings: new MasteringJobRepository(prisma),
      maxSeconds: config.MAX_SEPARATION_SECONDS,
    }),
  routes: masteringRoutes,
};
