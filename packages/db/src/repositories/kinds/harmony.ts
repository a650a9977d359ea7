import type { HarmonyJob, PrismaClient } from "../../generated/prisma/client.ts";
import type { OwnedStorage } from "../job-table.ts";
import { OneUploadJobRepository, oneUploadRows, type OneUploadKind } from "./one-upload.ts";

export interface NewHarmonyJob {
  callerId: number;
  inputKey: string;
  inputFormat: string;
  inputFileName?: string | null;
  interval: string;
  direction: string;
  /** The key the caller gave (`A minor`), or null: the worker finds it. */
  requestedKey: string | null;
  /** Whether the vocal separation isolates the input's vocal first. */
  isolateVocal: boolean;
  /** The input's duration in seconds (what the job counts in its key's usage). */
  audioSeconds?: number | null;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
}

/** What a succeeded harmony publishes: its files' keys, the key it is in and the separation models that isolated the vocal. */
export interface HarmonyOutputs {
  harmonyKey: string;
  lossyHarmonyKey: string;
  mixKey: string;
  lossyMixKey: string;
  key: string;
  keyConfidence: number | null;
  notes: number;
  models: string[];
}

const KIND = {
  kind: "harmony",
  model: "harmonyJob",
  table: "HarmonyJob",
  recordKind: "harmony",
  // what a row owns in storage: its upload and its outputs' folder
  inputColumns: ["inputKey"],
  outputColumns: ["harmonyKey", "lossyHarmonyKey", "mixKey", "lossyMixKey"],
} as const satisfies OneUploadKind<"harmony">;

/** Harmony rows as the API creates and reads them. */
export class HarmonyJobRepository extends OneUploadJobRepository<HarmonyJob, NewHarmonyJob> {
  constructor(prisma: PrismaClient) {
    super(prisma, KIND);
  }
}

const { rows, storage } = oneUploadRows<"harmony", HarmonyJob, HarmonyOutputs>(KIND);

export function harmonyStorage(row: HarmonyJob): OwnedStorage {
  return storage(row);
}

/** The `harmony` kind's rows: what the worker, the reconciler, /metrics and webhooks read and write. */
export const harmonyRows = rows;
