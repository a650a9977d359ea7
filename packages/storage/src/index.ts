import { publicBaseUrl, type Config } from "@mixdown/config";
import { LocalDiskStorage } from "./local.ts";
import { LazyS3Storage } from "./lazy-s3.ts";
import type { ObjectStorage } from "./types.ts";

export * from "./types.ts";
export * from "./signing.ts";
export * from "./signed-url-cache.ts";
export { diskFreeBytes } from "./disk.ts";
// spelled in @mixdown/jobs, beside the kinds they name (the database reads them too)
export { jobOutputKeys, KEY_AREAS, uploadKey, voiceModelKeys } from "@mixdown/jobs";
export { LocalDiskStorage, type LocalDiskStorageOptions } from "./local.ts";
export type { S3Storage, S3StorageOptions } from "./s3.ts";
export { LazyS3Storage } from "./lazy-s3.ts";
export { RetryingStorage, type StorageRetryPolicy } from "./retrying.ts";

/** The backend `STORAGE_DRIVER` names, configured from the environment (S3's SDK loaded on its first call). */
export function createStorage(
  config: Pick<
    Config,
    | "STORAGE_DRIVER"
    | "STORAGE_LOCAL_DIR"
    | "SIGNED_URL_SECRET"
    | "S3_ENDPOINT"
    | "S3_PUBLIC_ENDPOINT"
    | "S3_REGION"
    | "S3_BUCKET"
    | "S3_ACCESS_KEY_ID"
    | "S3_SECRET_ACCESS_KEY"
    | "S3_FORCE_PATH_STYLE"
    | "PUBLIC_BASE_URL"
    | "PORT"
  >,
): ObjectStorage {
  if (config.STORAGE_DRIVER === "s3") {
    return new LazyS3Storage({
      bucket: config.S3_BUCKET,
      region: config.S3_REGION,
      endpoint: config.S3_ENDPOINT,
      publicEndpoint: config.S3_PUBLIC_ENDPOINT,
      accessKeyId: config.S3_ACCESS_KEY_ID,
      secretAccessKey: config.S3_SECRET_ACCESS_KEY,
      forcePathStyle: config.S3_FORCE_PATH_STYLE,
    });
  }
  if (!config.SIGNED_URL_SECRET) throw new Error("SIGNED_URL_SECRET is required for local-disk storage");
  return new LocalDiskStorage({
    rootDir: config.STORAGE_LOCAL_DIR,
    publicBaseUrl: publicBaseUrl(config as Config),
    signingSecret: config.SIGNED_URL_SECRET,
  });
}
