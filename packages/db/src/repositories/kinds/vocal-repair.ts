import type { VocalRepairJob, PrismaClient } from "../../generated/prisma/client.ts";
import type { OwnedStorage } from "../job-table.ts";
import { OneUploadJobRepository, oneUploadRows, type OneUploadKind } from "./one-upload.ts";

export interface NewVocalRepairJob {
  callerId: number;
  inputKey: string;
  inputFormat: string;
  inputFileName?: string | null;
  /** The steps asked for, in the order they run. */
  steps: string[];
  /** Whether the vocal separation isolates the input's vocal first. */
  isolateVocal: boolean;
  /** The input's duration in seconds (what the job counts in its key's usage). */
  audioSeconds?: number | null;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
}

/** What a succeeded repair publishes: the repaired vocal's keys, and the separation models that served it. */
export interface VocalRepairOutputs {
  outputKey: string;
  lossyOutputKey: string;
  models: string[];
}

const KIND = {
  kind: "vocal-repair",
  model: "vocalRepairJob",
  table: "VocalRepairJob",
  recordKind: "vocal_repair",
  // what a row owns in storage: its upload and its outputs' folder
  inputColumns: ["inputKey"],
  outputColumns: ["outputKey", "lossyOutputKey"],
} as const satisfies OneUploadKind<"vocal-repair">;

/** Vocal repair rows as the API creates and reads them. */
export class VocalRepairJobRepository extends OneUploadJobRepository<VocalRepairJob, NewVocalRepairJob> {
  constructor(prisma: PrismaClient) {
    super(prisma, KIND);
  }
}

const { rows, storage } = oneUploadRows<"vocal-repair", VocalRepairJob, VocalRepairOutputs>(KIND);

export function vocalRepairStorage(row: VocalRepairJob): OwnedStorage {
  return storage(row);
}

/** The `vocal-repair` kind's rows: what the worker, the reconciler, /metrics and webhooks read and write. */
export const vocalRepairRows = rows;
