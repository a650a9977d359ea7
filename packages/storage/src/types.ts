import type { Readable } from "node:stream";

export interface PutOptions {
  contentType?: string;
  /**
   * `putFile` only: the caller leaves the file as it is from now on (it may delete it), so local
   * storage may hard-link it into place instead of copying it when both are on one filesystem.
   */
  final?: boolean;
}

export interface StoredObjectInfo {
  size: number;
  contentType?: string;
}

/**
 * Where uploads, job outputs and voice model files live. Keys are `/`-separated relative paths
 * (`uploads/vocal-separation/<uuid>.wav`); callers never see backend paths or buckets.
 */
export interface ObjectStorage {
  readonly driver: "local" | "s3";
  /** Stores a stream whose length is not known in advance. Resolves with the bytes written. */
  putStream(key: string, body: Readable, options?: PutOptions): Promise<number>;
  /** Stores a file from local disk (a copy, or with `final` possibly the same file, linked). */
  putFile(key: string, filePath: string, options?: PutOptions): Promise<number>;
  /** Reads an object; rejects with `ObjectNotFoundError` when absent. */
  getStream(key: string): Promise<Readable>;
  /** Copies an object to a local file (written atomically). */
  downloadToFile(key: string, filePath: string): Promise<void>;
  /** Size and type of an object, or null when absent. */
  stat(key: string): Promise<StoredObjectInfo | null>;
  exists(key: string): Promise<boolean>;
  /** Deletes one object; deleting an absent key is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Deletes many objects at once (S3: DeleteObjects, 1,000 keys a request); absent keys are not
   * an error. Rejects when any could not be deleted (deleting the same keys again is safe).
   * `folders`: prefixes ending in `/` that held them (a job's output folders, which nothing writes
   * to any more), removed too where the backend has folders (local disk).
   */
  deleteMany(keys: readonly string[], options?: { folders?: readonly string[] }): Promise<void>;
  /** Deletes every object whose key starts with `prefix`; returns how many were deleted. */
  deletePrefix(prefix: string): Promise<number>;
  /** Lists keys under a prefix (tests, maintenance); not meant for hot paths. */
  list(prefix: string): Promise<string[]>;
  /** Calls `visit` with every object's key and size in bytes under a prefix (usage figures); a full listing. */
  forEachObject(prefix: string, visit: (key: string, bytes: number) => void): Promise<void>;
  /** A URL anyone can GET for `ttlSeconds` without other credentials. */
  signedUrl(key: string, ttlSeconds: number): Promise<string>;
  /** Resolves when the backend is reachable and usable (readiness checks); rejects otherwise. */
  ping(): Promise<void>;
  /** Releases sockets and handles. */
  close(): Promise<void>;
}

export class ObjectNotFoundError extends Error {
  constructor(readonly key: string) {
    super(`object not found: ${key}`);
    this.name = "ObjectNotFoundError";
  }
}

/**
 * The storage backend could not be reached or answered that it cannot serve now (a refused or
 * dropped connection, a timeout, a 5xx): worth retrying later, unlike a missing object or a
 * refused request. `cause` is the client's error.
 */
export class StorageUnavailableError extends Error {
  constructor(
    /** What was being done, as a verb: `store`, `read`, `delete`, ... */
    readonly operation: string,
    readonly key: string | undefined,
    cause: unknown,
    /** How many tries were made, when the call was retried. */
    readonly tries?: number,
  ) {
    const reason = (cause as Error)?.message || (cause as Error)?.name || String(cause);
    super(
      `object storage is unavailable: could not ${operation}${key ? ` ${key}` : ""}${tries ? ` (${tries} tries)` : ""}: ${reason}`,
      { cause },
    );
    this.name = "StorageUnavailableError";
  }
}

export class InvalidKeyError extends Error {
  constructor(readonly key: string) {
    super(`invalid storage key: ${JSON.stringify(key)}`);
    this.name = "InvalidKeyError";
  }
}

/** Keys are relative, `/`-separated, without empty, `.` or `..` segments. */
export function assertValidKey(key: string): void {
  if (
    typeof key !== "string" ||
    key.length === 0 ||
    key.length > 1024 ||
    key.startsWith("/") ||
    key.includes("\\") ||
    key.includes("\0") ||
    key.split("/").some((s) => s === "" || s === "." || s === "..")
  ) {
    throw new InvalidKeyError(key);
  }
}

const CONTENT_TYPES: Record<string, string> = {
  wav: "audio/wav",
  mp3: "audio/mpeg",
  flac: "audio/flac",
  webm: "audio/webm",
  ogg: "audio/ogg",
  json: "application/json",
  onnx: "application/octet-stream",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
};

/** Content type from a key's extension; octet-stream when unknown. */
export function contentTypeForKey(key: string): string {
  const ext = key.slice(key.lastIndexOf(".") + 1).toLowerCase();
  return (key.includes(".") && CONTENT_TYPES[ext]) || "application/octet-stream";
}
