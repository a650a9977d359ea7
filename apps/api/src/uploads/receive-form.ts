import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, stat } from "node:fs/promises";
import path from "node:path";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { FastifyRequest } from "fastify";
import { ApiError, badRequest, payloadTooLarge, unprocessable } from "../http/errors.ts";
import { reclaimBuffersWhile } from "./buffer-reclaim.ts";

/** How many leading bytes of each file are kept in memory for format sniffing. */
export const HEAD_BYTES = 4096;

export interface ReceivedFile {
  field: string;
  /** The part's bytes, on local disk under TMP_DIR. */
  path: string;
  size: number;
  /** The client's file name: informational only, never used to decide the format. */
  filename: string | undefined;
  /** The first HEAD_BYTES bytes. */
  head: Buffer;
  /** Hex sha256 of the bytes, hashed as they streamed in (an Idempotency-Key's request fingerprint uses it). */
  sha256: string;
}

export interface ReceivedForm {
  files: Map<string, ReceivedFile>;
  /** The parts of the spec's `many` field, in the order they were sent (empty without one). */
  fileList: ReceivedFile[];
  fields: Map<string, string>;
  /** Deletes the temporary files; safe to call more than once. */
  cleanup(): Promise<void>;
}

export interface FormSpec {
  /** Accepted file parts and each one's size limit; other file parts are read and discarded. */
  files: Record<string, { maxBytes: number }>;
  /**
   * The route's text fields. A file part under one of these names is read as the field's text
   * when it is small UTF-8 (see FIELD_FILE_MAX_BYTES), because real clients send fields that way:
   * Python `requests` with `files={"voiceModelId": "3"}`, curl with `-F voiceModelId=@id.txt`.
   */
  textFields?: readonly string[];
  /** Largest text field sent as a file part (default FIELD_FILE_MAX_BYTES): a TTS text is longer than an id. */
  textFileMaxBytes?: number;
  /**
   * Text fields that may be sent many times (a batch's `urls`, one part per link): every value is
   * kept, in order, one per line, where another field keeps its first. At most `max` parts.
   */
  repeated?: { names: readonly string[]; max: number };
  /**
   * A file field that may be sent many times (a batch's `files`): each part within `maxBytes`, at
   * most `maxFiles` of them and `maxTotalBytes` together; past a limit the upload stops with 413
   * naming the setting (`settings`) and every byte received so far is deleted.
   */
  many?: {
    field: string;
    maxBytes: number;
    maxFiles: number;
    maxTotalBytes: number;
    settings: { maxFiles: string; maxTotalBytes: string };
  };
}

const MB = 1024 * 1024;
const FIELD_MAX_BYTES = 256 * 1024;
/** Largest file part read as a text field's value; anything bigger is a real file in the wrong place. */
export const FIELD_FILE_MAX_BYTES = 4096;
/** Room for text fields and multipart boundaries on top of the files' limits. */
const FORM_OVERHEAD_BYTES = 2 * MB;

export function describeSize(bytes: number): string {
  return bytes % MB === 0 ? `${bytes / MB} MB` : `${bytes} bytes`;
}

function tooLarge(field: string, maxBytes: number): ApiError {
  return payloadTooLarge(`${field} exceeds the maximum upload size of ${describeSize(maxBytes)}`);
}

/**
 * Streams a multipart form's files to a private temporary directory, counting bytes as they
 * arrive: a file past its limit stops the upload with 413 (its partial bytes are deleted), so
 * memory stays flat whatever the upload's size. Text fields are collected as strings, also
 * when sent as small file parts under a name the route declares as text (`spec.textFields`).
 */
export async function receiveForm(request: FastifyRequest, spec: FormSpec, tmpDir: string): Promise<ReceivedForm> {
  if (!request.isMultipart()) {
    throw badRequest("request body must be multipart/form-data");
  }
  const limits = Object.values(spec.files).map((f) => f.maxBytes);
  // A form without file parts (TTS) still takes text fields sent as files.
  const maxFile = Math.max(spec.textFileMaxBytes ?? FIELD_FILE_MAX_BYTES, ...limits, spec.many?.maxBytes ?? 0);
  const declared = Number(request.headers["content-length"]);
  const manyBytes = spec.many ? spec.many.maxTotalBytes + spec.many.maxFiles * 1024 : 0;
  if (Number.isFinite(declared) && declared > limits.reduce((a, b) => a + b, 0) + manyBytes + FORM_OVERHEAD_BYTES) {
    if (spec.many)
      throw payloadTooLarge(
        `the request body is larger than ${spec.many.settings.maxTotalBytes} (${describeSize(spec.many.maxTotalBytes)}) allows`,
      );
    // Refuse before reading: the declared body cannot fit (the rest of it is discarded by Node).
    const names = Object.keys(spec.files);
    throw names.length === 1
      ? tooLarge(names[0]!, maxFile)
      : payloadTooLarge("request body is larger than the upload limits allow");
  }

  const dir = await mkdtemp(path.join(tmpDir, "upload-"));
  const files = new Map<string, ReceivedFile>();
  const fileList: ReceivedFile[] = [];
  const fields = new Map<string, string>();
  let cleaned: Promise<void> | undefined;
  const cleanup = () => (cleaned ??= rm(dir, { recursive: true, force: true }));

  try {
    await reclaimBuffersWhile(() => readParts(request, spec, dir, { files, fileList, fields }, maxFile));
  } catch (error) {
    await cleanup();
    throw toClientError(error);
  }
  return { files, fileList, fields, cleanup };
}

async function readParts(
  request: FastifyRequest,
  spec: FormSpec,
  dir: string,
  { files, fileList, fields }: Pick<ReceivedForm, "files" | "fileList" | "fields">,
  maxFile: number,
): Promise<void> {
  const textFields = new Set(spec.textFields ?? []);
  const many = spec.many;
  // One more file than allowed is read as far as its header, so that the 413 can name the limit.
  const manyParts = many ? many.maxFiles + 1 : 0;
  const parts = request.parts({
    limits: {
      fileSize: maxFile,
      files: Object.keys(spec.files).length + textFields.size + 4 + manyParts,
      fields: 32 + (spec.repeated?.max ?? 0),
      fieldSize: FIELD_MAX_BYTES,
      parts: 48 + manyParts + (spec.repeated?.max ?? 0),
    },
  });
  let manyBytes = 0;
  const repeated = new Set(spec.repeated?.names ?? []);
  const keepField = (name: string, value: string) => {
    const first = fields.get(name);
    if (first === undefined) fields.set(name, value);
    else if (repeated.has(name)) fields.set(name, `${first}\n${value}`);
  };
  for await (const part of parts) {
    if (part.type === "field") {
      if (part.valueTruncated) throw payloadTooLarge(`${part.fieldname} is longer than ${FIELD_MAX_BYTES / 1024} KB`);
      keepField(part.fieldname, String(part.value));
      continue;
    }
    if (textFields.has(part.fieldname)) {
      keepField(
        part.fieldname,
        await readFilePartAsText(part.fieldname, part.file, spec.textFileMaxBytes ?? FIELD_FILE_MAX_BYTES),
      );
      continue;
    }
    if (many && part.fieldname === many.field) {
      if (fileList.length >= many.maxFiles) {
        throw payloadTooLarge(`a batch takes at most ${many.maxFiles} files (${many.settings.maxFiles})`);
      }
      const file = await storePart(part, path.join(dir, `many-${fileList.length}`), many.maxBytes, (n) => {
        manyBytes += n;
        if (manyBytes > many.maxTotalBytes) {
          return payloadTooLarge(
            `the files of a batch are at most ${describeSize(many.maxTotalBytes)} together (${many.settings.maxTotalBytes})`,
          );
        }
      });
      fileList.push(file);
      continue;
    }
    const fileSpec = Object.hasOwn(spec.files, part.fieldname) ? spec.files[part.fieldname] : undefined;
    if (!fileSpec) {
      part.file.resume();
      await new Promise((resolve) => part.file.once("end", resolve).once("close", resolve));
      continue;
    }
    if (files.has(part.fieldname)) throw unprocessable(`${part.fieldname} must be sent once`);
    const target = path.join(dir, `${files.size}-${part.fieldname.replace(/[^A-Za-z0-9_-]/g, "_")}`);
    files.set(part.fieldname, await storePart(part, target, fileSpec.maxBytes));
  }
}

/**
 * Streams one file part (or a file unpacked from one: a batch's zip) to `target`, counting,
 * hashing and keeping its head; past `maxBytes` it is a 413, and `onBytes` may refuse (the form's
 * own limits).
 */
export async function storePart(
  part: { fieldname: string; filename: string | undefined; file: Readable & { truncated?: boolean } },
  target: string,
  maxBytes: number,
  onBytes?: (bytes: number) => ApiError | undefined,
): Promise<ReceivedFile> {
  let size = 0;
  const headChunks: Buffer[] = [];
  let headLength = 0;
  const hash = createHash("sha256");
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size > maxBytes) return callback(tooLarge(part.fieldname, maxBytes));
      const refused = onBytes?.(chunk.length);
      if (refused) return callback(refused);
      hash.update(chunk);
      if (headLength < HEAD_BYTES) {
        headChunks.push(Buffer.from(chunk.subarray(0, HEAD_BYTES - headLength)));
        headLength += Math.min(chunk.length, HEAD_BYTES - headLength);
      }
      callback(null, chunk);
    },
  });
  await pipeline(part.file, counter, createWriteStream(target));
  if (part.file.truncated) throw tooLarge(part.fieldname, maxBytes);
  return {
    field: part.fieldname,
    path: target,
    size,
    filename: part.filename,
    head: Buffer.concat(headChunks),
    sha256: hash.digest("hex"),
  };
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** A text field sent as a file part: its content is the value, if it is small UTF-8 text. */
async function readFilePartAsText(field: string, file: AsyncIterable<Buffer>, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of file) {
    size += chunk.length;
    if (size > maxBytes) {
      throw unprocessable(`${field} must be a text value, got a file larger than ${describeTextSize(maxBytes)}`);
    }
    chunks.push(chunk);
  }
  const bytes = Buffer.concat(chunks);
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw unprocessable(`${field} must be a text value, got a binary file (not UTF-8)`);
  }
  if (text.includes("\0")) throw unprocessable(`${field} must be a text value, got a binary file (contains NUL bytes)`);
  return text;
}

function describeTextSize(bytes: number): string {
  return bytes % 1024 === 0 ? `${bytes / 1024} KB` : `${bytes} bytes`;
}

function toClientError(error: unknown): unknown {
  if (error instanceof ApiError) return error;
  const e = error as { code?: string; statusCode?: number; message?: string; part?: { fieldname?: string } };
  if (e?.code === "FST_REQ_FILE_TOO_LARGE") {
    return payloadTooLarge(`${e.part?.fieldname ?? "file"} exceeds the maximum upload size`);
  }
  if (e?.statusCode && e.statusCode < 500) return error;
  // busboy's parse errors ("Unexpected end of form", "Malformed part header") and aborted uploads.
  return badRequest(`malformed or interrupted multipart body: ${e?.message ?? "unknown error"}`);
}

/** Removes upload leftovers of crashed processes (older than `maxAgeMs`) from TMP_DIR. */
export async function sweepStaleUploads(tmpDir: string, maxAgeMs = 3600_000): Promise<number> {
  await mkdir(tmpDir, { recursive: true });
  let removed = 0;
  for (const entry of await readdir(tmpDir)) {
    if (!entry.startsWith("upload-")) continue;
    const full = path.join(tmpDir, entry);
    const info = await stat(full).catch(() => null);
    if (info && Date.now() - info.mtimeMs > maxAgeMs) {
      await rm(full, { recursive: true, force: true });
      removed++;
    }
  }
  return removed;
}
