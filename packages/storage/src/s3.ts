import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { PassThrough, type Readable } from "node:stream";
import { writeFileAtomically } from "./local-file.ts";
import { MAX_PRESIGN_SECONDS, SignedUrlCache } from "./signed-url-cache.ts";
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import {
  assertValidKey,
  contentTypeForKey,
  ObjectNotFoundError,
  StorageUnavailableError,
  type ObjectStorage,
  type PutOptions,
  type StoredObjectInfo,
} from "./types.ts";

export interface S3StorageOptions {
  bucket: string;
  region: string;
  /** Omit for AWS; set for MinIO, R2, s3rver, ... */
  endpoint?: string;
  /** Endpoint clients reach, when it differs from the one this process uses (e.g. inside docker). */
  publicEndpoint?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
  /**
   * Multipart part size and how many parts are in flight: their product bounds the memory one
   * upload holds (5 MiB x 2 by default).
   */
  partSizeBytes?: number;
  queueSize?: number;
}

const SINGLE_PUT_MAX_BYTES = 5 * 1024 * 1024 * 1024;

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === "NotFound" || e?.name === "NoSuchKey" || e?.$metadata?.httpStatusCode === 404;
}

const UNREACHABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);
const UNAVAILABLE_NAMES = new Set(["TimeoutError", "RequestTimeout", "SlowDown", "ServiceUnavailable", "InternalError"]);

/** A refused or dropped connection, a timeout or a 5xx: the server is away, not the request wrong. */
function isUnavailable(error: unknown): boolean {
  const e = error as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  if (!e) return false;
  if (e.code && UNREACHABLE_CODES.has(e.code)) return true;
  if (e.name && UNAVAILABLE_NAMES.has(e.name)) return true;
  if ((e.$metadata?.httpStatusCode ?? 0) >= 500) return true;
  return /socket hang up|ECONNREFUSED|ECONNRESET/.test(e.message ?? "");
}

/**
 * Runs one call to the server; a failure that says the server is away becomes a
 * `StorageUnavailableError`, so that callers can answer 503 or retry without knowing the SDK.
 */
async function reaching<T>(operation: string, key: string | undefined, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isUnavailable(error)) throw new StorageUnavailableError(operation, key, error);
    throw error;
  }
}

/** Objects in one S3 bucket (AWS, MinIO, R2, s3rver). */
export class S3Storage implements ObjectStorage {
  readonly driver = "s3" as const;
  private readonly client: S3Client;
  private readonly presignClient: S3Client;
  private readonly signed = new SignedUrlCache(
    ({ key, issuedAt, expiresIn }) =>
      getSignedUrl(this.presignClient, new GetObjectCommand({ Bucket: this.options.bucket, Key: key }), {
        expiresIn,
        signingDate: new Date(issuedAt * 1000),
      }),
    MAX_PRESIGN_SECONDS,
  );

  constructor(private readonly options: S3StorageOptions) {
    const clientConfig = (endpoint: string | undefined) =>
      new S3Client({
        region: options.region,
        endpoint,
        forcePathStyle: options.forcePathStyle,
        credentials:
          options.accessKeyId && options.secretAccessKey
            ? { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey }
            : undefined,
        // Default CRC checksums on every request are not understood by every S3-compatible
        // server (s3rver, older MinIO, R2 on some operations): only send them where S3 needs one.
        requestChecksumCalculation: "WHEN_REQUIRED",
        responseChecksumValidation: "WHEN_REQUIRED",
        // Without them a server that stops answering (a network drop, no RST) holds a request
        // forever: a connect gets 5 s, a socket that moves no bytes for 60 s is given up.
        requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
      });
    this.client = clientConfig(options.endpoint);
    this.presignClient = options.publicEndpoint ? clientConfig(options.publicEndpoint) : this.client;
  }

  get bucket(): string {
    return this.options.bucket;
  }

  private async upload(key: string, body: Readable, contentType: string): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.options.bucket, Key: key, Body: body, ContentType: contentType },
      partSize: this.options.partSizeBytes ?? 5 * 1024 * 1024,
      queueSize: this.options.queueSize ?? 2,
      leavePartsOnError: false,
    });
    await reaching("store", key, () => upload.done());
  }

  async putStream(key: string, body: Readable, options?: PutOptions): Promise<number> {
    assertValidKey(key);
    let bytes = 0;
    const counter = new PassThrough();
    counter.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
    });
    body.on("error", (error) => counter.destroy(error));
    body.pipe(counter);
    await this.upload(key, counter, options?.contentType ?? contentTypeForKey(key));
    return bytes;
  }

  /**
   * Files of known size go up in one streamed PUT (up to S3's 5 GB single-request limit): no
   * part buffers, so memory stays flat whatever the size. Larger files use multipart.
   */
  async putFile(key: string, filePath: string, options?: PutOptions): Promise<number> {
    assertValidKey(key);
    const { size } = await stat(filePath);
    const contentType = options?.contentType ?? contentTypeForKey(key);
    if (size > SINGLE_PUT_MAX_BYTES) {
      await this.upload(key, createReadStream(filePath), contentType);
      return size;
    }
    const command = new PutObjectCommand({
      Bucket: this.options.bucket,
      Key: key,
      Body: createReadStream(filePath),
      ContentLength: size,
      ContentType: contentType,
    });
    // Over plain HTTP (MinIO on a private network, s3rver) the SDK would read the whole file once
    // more to sign its sha256; an unsigned payload (what it sends over HTTPS anyway) avoids that.
    command.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { headers?: Record<string, string> };
        if (request?.headers) request.headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD";
        return next(args);
      },
      { step: "build", name: "mixdownUnsignedPayload" },
    );
    await reaching("store", key, () => this.client.send(command));
    return size;
  }

  async getStream(key: string): Promise<Readable> {
    assertValidKey(key);
    try {
      const out = await reaching("read", key, () =>
        this.client.send(new GetObjectCommand({ Bucket: this.options.bucket, Key: key })),
      );
      return out.Body as Readable;
    } catch (error) {
      if (isNotFound(error)) throw new ObjectNotFoundError(key);
      throw error;
    }
  }

  async downloadToFile(key: string, filePath: string): Promise<void> {
    await writeFileAtomically(await this.getStream(key), filePath);
  }

  async stat(key: string): Promise<StoredObjectInfo | null> {
    assertValidKey(key);
    try {
      const out = await reaching("look up", key, () =>
        this.client.send(new HeadObjectCommand({ Bucket: this.options.bucket, Key: key })),
      );
      return { size: out.ContentLength ?? 0, contentType: out.ContentType };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async exists(key: string): Promise<boolean> {
    return (await this.stat(key)) !== null;
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    await reaching("delete", key, () => this.client.send(new DeleteObjectCommand({ Bucket: this.options.bucket, Key: key })));
  }

  /** A bucket has no folders: `options.folders` has nothing to remove. */
  async deleteMany(keys: readonly string[]): Promise<void> {
    for (const key of keys) assertValidKey(key);
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      const out = await reaching("delete", batch[0], () =>
        this.client.send(
          new DeleteObjectsCommand({
            Bucket: this.options.bucket,
            Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
          }),
        ),
      );
      if (out.Errors && out.Errors.length > 0) {
        const first = out.Errors[0];
        throw new Error(`deleting ${out.Errors.length} of ${batch.length} objects failed: ${first?.Key}: ${first?.Message}`);
      }
    }
  }

  async deletePrefix(prefix: string): Promise<number> {
    const keys = await this.list(prefix);
    await this.deleteMany(keys);
    return keys.length;
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    await this.forEachObject(prefix, (key) => void keys.push(key));
    return keys.sort();
  }

  async forEachObject(prefix: string, visit: (key: string, bytes: number) => void): Promise<void> {
    let token: string | undefined;
    do {
      const out = await reaching("list", prefix, () =>
        this.client.send(
          new ListObjectsV2Command({ Bucket: this.options.bucket, Prefix: prefix || undefined, ContinuationToken: token }),
        ),
      );
      for (const item of out.Contents ?? []) if (item.Key) visit(item.Key, item.Size ?? 0);
      token = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (token);
  }

  async signedUrl(key: string, ttlSeconds: number): Promise<string> {
    assertValidKey(key);
    return this.signed.get(key, ttlSeconds);
  }

  async ping(): Promise<void> {
    await reaching("reach the bucket", undefined, () => this.client.send(new HeadBucketCommand({ Bucket: this.options.bucket })));
  }

  async close(): Promise<void> {
    this.client.destroy();
    if (this.presignClient !== this.client) this.presignClient.destroy();
  }
}
