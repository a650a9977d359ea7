import type { Readable } from "node:stream";
import type { S3Storage, S3StorageOptions } from "./s3.ts";
import type { ObjectStorage, PutOptions, StoredObjectInfo } from "./types.ts";

/**
 * S3 storage whose AWS SDK is loaded on its first call, not when the process starts: a process
 * on local storage (`./mixdown.sh up`'s default) never loads it. The SDK is about 25 MB of each
 * process's memory (`import("@aws-sdk/client-s3")`: +25 MB RSS); a worker and the API each paid it.
 */
export class LazyS3Storage implements ObjectStorage {
  readonly driver = "s3" as const;
  #storage: Promise<S3Storage> | undefined;

  constructor(private readonly options: S3StorageOptions) {}

  /** The S3Storage behind it, created (and the SDK loaded) on first use. */
  storage(): Promise<S3Storage> {
    return (this.#storage ??= import("./s3.ts").then(({ S3Storage }) => new S3Storage(this.options)));
  }

  async putStream(key: string, body: Readable, options?: PutOptions): Promise<number> {
    return (await this.storage()).putStream(key, body, options);
  }

  async putFile(key: string, filePath: string, options?: PutOptions): Promise<number> {
    return (await this.storage()).putFile(key, filePath, options);
  }

  async getStream(key: string): Promise<Readable> {
    return (await this.storage()).getStream(key);
  }

  async downloadToFile(key: string, filePath: string): Promise<void> {
    return (await this.storage()).downloadToFile(key, filePath);
  }

  async stat(key: string): Promise<StoredObjectInfo | null> {
    return (await this.storage()).stat(key);
  }

  async exists(key: string): Promise<boolean> {
    return (await this.storage()).exists(key);
  }

  async delete(key: string): Promise<void> {
    return (await this.storage()).delete(key);
  }

  /** A bucket has no folders to remove. */
  async deleteMany(keys: readonly string[]): Promise<void> {
    return (await this.storage()).deleteMany(keys);
  }

  async deletePrefix(prefix: string): Promise<number> {
    return (await this.storage()).deletePrefix(prefix);
  }

  async list(prefix: string): Promise<string[]> {
    return (await this.storage()).list(prefix);
  }

  async forEachObject(prefix: string, visit: (key: string, bytes: number) => void): Promise<void> {
    return (await this.storage()).forEachObject(prefix, visit);
  }

  async signedUrl(key: string, ttlSeconds: number): Promise<string> {
    return (await this.storage()).signedUrl(key, ttlSeconds);
  }

  async ping(): Promise<void> {
    return (await this.storage()).ping();
  }

  async close(): Promise<void> {
    // never used: nothing was opened
    if (this.#storage) await (await this.#storage).close();
  }
}
