import type { MasteringJob, PrismaClient, Prisma } from "../../generated/prisma/client.ts";
import type { OwnedStorage } from "../job-table.ts";
import { OneUploadJobRepository, oneUploadRows, type OneUploadKind } from "./one-upload.ts";

/** A mastering to write: the target upload and either a reference upload or a loudness target. */
export type NewMasteringJob = {
  callerId: number;
  inputKey: string;
  inputFormat: string;
  inputFileName?: string | null;
  /** The target's duration in seconds (what the job counts in its key's usage). */
  audioSeconds?: number | null;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
} & (
  | { referenceKey: string; referenceFormat: string; referenceFileName?: string | null }
  | { targetLufs: number; truePeakDb: number }
);

/** What a succeeded mastering publishes. */
export interface MasteringOutputs {
  outputKey: string;
  output16BitKey: string;
  lossyOutputKey: string;
  loudnessBefore: Prisma.InputJsonValue;
  loudnessAfter: Prisma.InputJsonValue;
  processor: string;
}

const KIND = {
  kind: "mastering",
  model: "masteringJob",
  table: "MasteringJob",
  recordKind: "mastering",
  // what a row owns in storage: its uploads (target, reference) and its outputs' folder
  inputColumns: ["inputKey", "referenceKey"],
  outputColumns: ["outputKey", "output16BitKey", "lossyOutputKey"],
} as const satisfies OneUploadKind<"mastering">;

/** Mastering rows as the API creates and reads them. */
export class MasteringJobRepository extends OneUploadJobRepository<MasteringJob, NewMasteringJob> {
  constructor(prisma: PrismaClient) {
    super(prisma, KIND);
  }
}

const { rows, storage } = oneUploadRows<"mastering", MasteringJob, MasteringOutputs>(KIND);

export function masteringStorage(row: MasteringJob): OwnedStorage {
  return storage(row);
}

/** The `mastering` kind's rows: what the worker, the reconciler, /metrics and webhooks read and write. */
export const masteringRows = rows;
