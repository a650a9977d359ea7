import type { Prisma } from "@mixdown/db";
import type { ObjectStorage } from "@mixdown/storage";
import type { FastifyBaseLogger } from "fastify";
import { checkAudioUpload } from "../uploads/audio-check.ts";
import type { AudioFormat } from "../uploads/audio-format.ts";
import type { ReceivedFile } from "../uploads/receive-form.ts";
import type { UsageQuota } from "../usage/quota.ts";
import { StoredUploads } from "./stored-upload.ts";

/** The formats a separation's upload may be in, and every kind that takes its upload under the same rules. */
export const SEPARATION_FORMATS: readonly AudioFormat[] = ["wav", "webm", "mp3", "flac"];

/** What a row made from one upload stores about it. */
export interface StoredInput {
  inputKey: string;
  inputFormat: AudioFormat;
  inputFileName: string | null;
  /** the input's duration: what the job counts in its key's usage */
  audioSeconds: number;
}

/**
 * The create of a job whose one upload follows a separation's rules (a separation, an audio
 * analysis, a vocal repair): the upload checked (format from its bytes, MAX_SEPARATION_SECONDS),
 * the key's quota checked, the upload stored under `uploads/<kind>/`, then `write` makes the row
 * inside the quota's admission. A failure after the upload was stored deletes it, so a refused
 * create leaves nothing behind.
 */
export async function createWithSeparationUpload<Row>(
  deps: { storage: ObjectStorage; log: FastifyBaseLogger; quota: UsageQuota; maxSeconds: number },
  create: { kind: string; input: ReceivedFile; apiKeyId: number },
  write: (input: StoredInput, db: Prisma.TransactionClient) => Promise<Row>,
): Promise<Row> {
  const { kind, input, apiKeyId } = create;
  const { format, seconds } = await checkAudioUpload(input, SEPARATION_FORMATS, {
    seconds: deps.maxSeconds,
    setting: "MAX_SEPARATION_SECONDS",
  });
  await deps.quota.check(apiKeyId, seconds);
  const uploads = new StoredUploads(deps.storage, deps.log);
  const inputKey = await uploads.commit(() => uploads.store(kind, input, format));
  const stored: StoredInput = {
    inputKey,
    inputFormat: format,
    inputFileName: input.filename?.slice(0, 255) ?? null,
    audioSeconds: seconds,
  };
  return uploads.commit(() => deps.quota.admit(apiKeyId, seconds, (db) => write(stored, db)));
}
