import type { Readable } from "node:stream";
import pRetry from "p-retry";
import { StorageUnavailableError, type ObjectStorage, type PutOptions, type StoredObjectInfo } from "./types.ts";

export interface StorageRetryPolicy {
  /** Tries per call, the first included (1 = no retry). */
  attempts: number;
  /** Wait before the second try; each later wait doubles, up to `maxDelayMs`. */
  delayMs: number;
  maxDelayMs?: number;
  /** Told before each wait: what failed, which try it was and how long until the next. */
  onRetry?(event: { operation: string; key: string; attempt: number; delayMs: number; error: StorageUnavailableError }): void;
}

/**
 * An `ObjectStorage` whose calls are tried again with exponential backoff while the backend is
 * unavailable (`StorageUnavailableError`: S3 restarting, a network drop). A missing object or a
 * refused request fails at once. After the last try the error says how many tries were made, so
 * that a job's end names the outage. `putStream` is not retried (its body cannot be read twice);
 * `putFile` reads its file again on every try.
 */
export class RetryingStorage implements ObjectStorage {
  constructor(
    private readonly inner: ObjectStorage,
    private readonly policy: StorageRetryPolicy,
  ) {}

  get driver(): ObjectStorage["driver"] {
    return this.inner.driver;
  }

  private async retry<T>(operation: string, key: string, call: () => Promise<T>): Promise<T> {
    const { attempts, delayMs, maxDelayMs = 30_000 } = this.policy;
    try {
      return await pRetry(call, {
        retries: attempts - 1,
        factor: 2,
        minTimeout: delayMs,
        maxTimeout: maxDelayMs,
        shouldRetry: ({ error }) => error instanceof StorageUnavailableError,
        onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
          if (retriesLeft > 0 && error instanceof StorageUnavailableError)
            this.policy.onRetry?.({
              operation,
              key,
              attempt: attemptNumber,
              delayMs: Math.min(delayMs * 2 ** (attemptNumber - 1), maxDelayMs),
              error,
            });
        },
      });
    } catch (error) {
      // After the last try the error says how many were made, so that a job's end names the outage.
      if (error instanceof StorageUnavailableError) throw new StorageUnavailableError(operation, key, error.cause, attempts);
      throw error;
    }
  }

  putStream(key: string, body: Readable, options?: PutOptions): Promise<number> {
    return this.inner.putStream(key, body, options);
  }

  putFile(key: string, filePath: string, options?: PutOptions): Promise<number> {
    return this.retry("store", key, () => this.inner.putFile(key, filePath, options));
  }

  getStream(key: string): Promise<Readable> {
    return this.retry("read", key, () => this.inner.getStream(key));
  }

  downloadToFile(key: string, filePath: string): Promise<void> {
    return this.retry("read", key, () => this.inner.downloadToFile(key, filePath));
  }

  stat(key: string): Promise<StoredObjectInfo | null> {
    return this.retry("look up", key, () => this.inner.stat(key));
  }

  exists(key: string): Promise<boolean> {
    return this.retry("look up", key, () => this.inner.exists(key));
  }

  delete(key: string): Promise<void> {
    return this.retry("delete", key, () => this.inner.delete(key));
  }

  deleteMany(keys: readonly string[], options?: { folders?: readonly string[] }): Promise<void> {
    return this.retry("delete", keys[0], () => this.inner.deleteMany(keys, options));
  }

  deletePrefix(prefix: string): Promise<number> {
    return this.retry("delete", prefix, () => this.inner.deletePrefix(prefix));
  }

  list(prefix: string): Promise<string[]> {
    return this.retry("list", prefix, () => this.inner.list(prefix));
  }

  /** Not retried: a listing cut halfway would visit its first objects twice. */
  forEachObject(prefix: string, visit: (key: string, bytes: number) => void): Promise<void> {
    return this.inner.forEachObject(prefix, visit);
  }

  signedUrl(key: string, ttlSeconds: number): Promise<string> {
    return this.inner.signedUrl(key, ttlSeconds);
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
