import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { AudioAnalysisJobRepository } from "@mixdown/db";
import { Type, type Static } from "typebox";
import type { AppContext } from "../../app-context.ts";
import { FilePart, FormSchema } from "../../http/form-schema.ts";
import { jobReadRoutes, multipartJobCreateRoute } from "../../http/job-routes.ts";
import { WebhookUrlField } from "../../jobs/job-origin.ts";
import type { ApiKind } from "../context.ts";
import { AudioAnalysisService } from "./service.ts";

/** An audio analysis's create form: what the document shows and what a request is validated by. */
const audioAnalysisForm = (maxMb: number) =>
  Type.Object({
    inputFile: FilePart(`wav, webm, mp3 or flac; max ${maxMb} MB`),
    webhookUrl: WebhookUrlField,
  });

/** An audio analysis's create, as its form schema reads it. */
export type AudioAnalysisForm = Static<ReturnType<typeof audioAnalysisForm>>;

/** `/audio-analyses`: create (multipart), list, fetch, cancel, delete. */
const audioAnalysisRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; service: AudioAnalysisService }> = async (
  app,
  { ctx, service },
) => {
  const { config } = ctx;
  const maxMb = Math.round(config.MAX_SEPARATION_UPLOAD_BYTES / 1024 / 1024);
  const tags = ["Audio analyses"];
  const form = new FormSchema(audioAnalysisForm(maxMb), {
    inputFile: { required: () => "inputFile is required (a wav, webm, mp3 or flac file part)" },
  });
  multipartJobCreateRoute(app, ctx, {
    path: "audio-analyses",
    tags,
    operationId: "createAudioAnalysis",
    summary: "Create an audio analysis job and queue it",
    description: `Mixdown: finds the key and scale, tempo and beat positions (Essentia's KeyExtractor and RhythmExtractor2013), integrated loudness, loudness range and true peak (EBU R128 / ITU-R BS.1770-4, ffmpeg's ebur128 filter) and duration of a file. Multipart form with one file part \`inputFile\`: wav, webm, mp3 or flac (decided from the bytes), at most ${maxMb} MB (MAX_SEPARATION_UPLOAD_BYTES) and MAX_SEPARATION_SECONDS long, as a separation's; optional text field \`webhookUrl\`. The record's \`analysis\` holds the result once the job succeeded.`,
    form,
    files: { inputFile: { maxBytes: config.MAX_SEPARATION_UPLOAD_BYTES } },
    record: "AudioAnalysisJob",
    status: 200,
    kind: "audio_analysis",
    service,
  });

  jobReadRoutes(
    app,
    {
      path: "audio-analyses",
      tags,
      noun: "audio analysis",
      record: "AudioAnalysisJob",
      recordKind: "audio_analysis",
      operation: "AudioAnalysis",
      operations: "AudioAnalyses",
      maxPerPage: config.MAX_PER_PAGE,
    },
    service,
    ctx,
  );
};

/** Audio analyses: key, tempo, loudness and duration of an uploaded file. */
export const audioAnalysisApi: ApiKind<AudioAnalysisService> = {
  service: ({ config, prisma, ...deps }) =>
    new AudioAnalysisService({
      ...deps,
      analyses: new AudioAnalysisJobRepository(prisma),
      maxSeconds: config.MAX_SEPARATION_SECONDS,
    }),
  routes: audioAnalysisRoutes,
};
