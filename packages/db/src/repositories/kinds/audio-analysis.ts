import type { AudioAnalysisJob, PrismaClient, Prisma } from "../../generated/prisma/client.ts";
import type { OwnedStorage } from "../job-table.ts";
import { OneUploadJobRepository, oneUploadRows, type OneUploadKind } from "./one-upload.ts";

export interface NewAudioAnalysisJob {
  callerId: number;
  inputKey: string;
  inputFormat: string;
  inputFileName?: string | null;
  /** The input's duration in seconds (what the job counts in its key's usage). */
  audioSeconds?: number | null;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
}

/** What a succeeded analysis publishes: the worker's result, stored as it is, and what found it. */
export interface AudioAnalysisOutput {
  analysis: Prisma.InputJsonValue;
  analyzer: string;
}

const KIND = {
  kind: "audio-analysis",
  model: "audioAnalysisJob",
  table: "AudioAnalysisJob",
  recordKind: "audio_analysis",
  // what a row owns in storage: its upload (the analysis itself is in the row)
  inputColumns: ["inputKey"],
  outputColumns: [],
} as const satisfies OneUploadKind<"audio-analysis">;

/** Audio analysis rows as the API creates and reads them. */
export class AudioAnalysisJobRepository extends OneUploadJobRepository<AudioAnalysisJob, NewAudioAnalysisJob> {
  constructor(prisma: PrismaClient) {
    super(prisma, KIND);
  }
}

const { rows, storage } = oneUploadRows<"audio-analysis", AudioAnalysisJob, AudioAnalysisOutput>(KIND);

export function audioAnalysisStorage(row: AudioAnalysisJob): OwnedStorage {
  return storage(row);
}

/** The `audio-analysis` kind's rows: what the worker, the reconciler, /metrics and webhooks read and write. */
export const audioAnalysisRows = rows;
