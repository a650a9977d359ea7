import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import { dirname } from "node:path";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { verifyFile, type ExpectedFile } from "./verify.ts";

export interface DownloadProgress {
  /** bytes in the partial file now, including what an earlier attempt or run left */
  received: number;
  /** the whole file's size, once the server or the expectation says it */
  total?: number;
  /** bytes that were already there when this download started (a resumed one) */
  resumedFrom: number;
}

export interface DownloadOptions {
  /** http:, https: or file: */
  url: string;
  /** where the verified file ends up; until then it is `<target>.part` */
  target: string;
  expect?: ExpectedFile;
  /** refuse a file larger than this (before downloading when the server states its length) */
  maxBytes?: number;
  /** tries in all, for network errors, 5xx, 408 and 429 (default 6) */
  attempts?: number;
  /** the first wait between tries; it doubles, up to 30 s (default 1 s) */
  backoffMs?: number;
  /** a try that receives nothing for this long is abandoned and retried (default 60 s) */
  idleTimeoutMs?: number;
  /** resolves host names for every request, the address policy's own lookup */
  lookup?: LookupFunction;
  /** called with every URL requested, redirects included; throws a DownloadError to refuse one */
  checkUrl?: (url: URL) => void;
  signal?: AbortSignal;
  onProgress?: (progress: DownloadProgress) => void;
  /** one line per retry, saying why */
  log?: (line: string) => void;
}

export interface DownloadedFile {
  path: string;
  sizeBytes: number;
  sha256: string;
  /** bytes a previous attempt or run had already written */
  resumedFrom: number;
  /** how many requests it took */
  tries: number;
}

export type DownloadFailure = "not-found" | "http" | "network" | "size" | "checksum" | "too-large" | "refused";

/** A download that cannot succeed (or did not within its tries); its message names the URL. */
export class DownloadError extends Error {
  override readonly name = "DownloadError";
  constructor(
    message: string,
    readonly reason: DownloadFailure,
  ) {
    super(message);
  }
}

const MAX_REDIRECTS = 10;
const MAX_BACKOFF_MS = 30_000;

/** What the partial file was made from, so a resumed request asks for the same version (If-Range). */
interface PartialOrigin {
  url: string;
  validator?: string;
}

/**
 * Downloads `url` to `target`: streamed into `<target>.part`, resumed with `Range` after a dropped
 * connection or in a later run, retried with backoff on network errors and 5xx, checked against
 * the expected size and hashes, and only then renamed into place. A file that fails its checks is
 * deleted; nothing but a verified file is ever at `target`.
 */
export async function downloadFile(options: DownloadOptions): Promise<DownloadedFile> {
  const { target } = options;
  const partial = `${target}.part`;
  const originFile = `${target}.part.json`;
  const attempts = options.attempts ?? 6;
  const expectedSize = options.expect?.sizeBytes ?? undefined;
  if (expectedSize !== undefined && options.maxBytes !== undefined && expectedSize > options.maxBytes)
    throw new DownloadError(`${options.url} is ${expectedSize} bytes, over the limit of ${options.maxBytes}`, "too-large");
  await mkdir(dirname(target), { recursive: true });

  // A partial file from another URL (or without its record) cannot be trusted to be a prefix.
  const origin = await readFile(originFile, "utf8").then(
    (text) => JSON.parse(text) as PartialOrigin,
    () => undefined,
  );
  if (origin?.url !== options.url) await removePartial(target);
  const resumedFrom = await sizeOf(partial);
  let validator = origin?.url === options.url ? origin.validator : undefined;

  let wait = options.backoffMs ?? 1000;
  let tries = 0;
  let complete = false;
  while (!complete) {
    tries += 1;
    options.signal?.throwIfAborted();
    try {
      // Recorded before the body is written, so that a later run resumes the same version.
      const remember = async (v: string | undefined) => {
        validator = v;
        await writeFile(originFile, JSON.stringify({ url: options.url, validator: v } satisfies PartialOrigin));
      };
      complete = await fetchOnce(options, partial, validator, expectedSize, remember);
    } catch (err) {
      if (err instanceof DownloadError && err.reason !== "network") {
        if (err.reason === "too-large" || err.reason === "size") await removePartial(target);
        throw err;
      }
      if (options.signal?.aborted) throw options.signal.reason;
      const message = (err as Error).message;
      if (tries >= attempts)
        throw new DownloadError(`${options.url}: gave up after ${tries} tries; the last: ${message}`, "network");
      const retryAfter = (err as { retryAfterMs?: number }).retryAfterMs;
      const delay = Math.min(retryAfter ?? wait, MAX_BACKOFF_MS);
      options.log?.(`${options.url}: ${message}; try ${tries + 1} of ${attempts} in ${(delay / 1000).toFixed(1)} s`);
      await sleep(delay, undefined, options.signal ? { signal: options.signal } : undefined);
      wait = Math.min(wait * 2, MAX_BACKOFF_MS);
    }
  }

  const verified = await verifyFile(partial, options.expect ?? {}).catch(async (err: unknown) => {
    await removePartial(target);
    throw new DownloadError(`${options.url}: ${(err as Error).message}; the download was deleted`, "checksum");
  });
  const handle = await open(partial, "r+");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(partial, target);
  await rm(originFile, { force: true });
  return { path: target, sizeBytes: verified.sizeBytes, sha256: verified.sha256, resumedFrom, tries };
}

/** Deletes what an unfinished download of `target` left. */
export async function removePartial(target: string): Promise<void> {
  await rm(`${target}.part`, { force: true });
  await rm(`${target}.part.json`, { force: true });
}

async function sizeOf(path: string): Promise<number> {
  return stat(path).then(
    (s) => s.size,
    () => 0,
  );
}

class RetryableError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** One request (and its redirects): appends to the partial file from its current end. */
async function fetchOnce(
  options: DownloadOptions,
  partial: string,
  validator: string | undefined,
  expectedSize: number | undefined,
  remember: (validator: string | undefined) => Promise<void>,
): Promise<boolean> {
  let offset = await sizeOf(partial);
  if (expectedSize !== undefined && offset === expectedSize) return true;
  if (expectedSize !== undefined && offset > expectedSize) {
    await rm(partial, { force: true });
    offset = 0;
  }
  let url = new URL(options.url);
  if (offset > 0) options.log?.(`${options.url}: resuming at byte ${offset}`);
  if (url.protocol === "file:") {
    await remember(undefined);
    return copyLocal(options, fileURLToPath(url), partial, offset);
  }
  for (let hop = 0; ; hop++) {
    if (url.protocol !== "http:" && url.protocol !== "https:")
      throw new DownloadError(`${url.href}: only http, https and file URLs can be downloaded`, "refused");
    options.checkUrl?.(url);
    const response = await get(url, options, offset > 0 ? { offset, validator } : undefined);
    const status = response.statusCode ?? 0;
    if (status >= 300 && status < 400 && response.headers.location) {
      response.resume();
      if (hop >= MAX_REDIRECTS) throw new DownloadError(`${options.url}: more than ${MAX_REDIRECTS} redirects`, "http");
      url = new URL(response.headers.location, url);
      continue;
    }
    return receive(options, response, url, partial, offset, expectedSize, remember);
  }
}

function get(url: URL, options: DownloadOptions, range?: { offset: number; validator?: string }): Promise<IncomingMessage> {
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  const headers: Record<string, string> = { "User-Agent": "Mixdown-Downloads/1", "Accept-Encoding": "identity" };
  if (range) {
    headers.Range = `bytes=${range.offset}-`;
    if (range.validator) headers["If-Range"] = range.validator;
  }
  return new Promise((resolve, reject) => {
    const request = send(
      url,
      {
        headers,
        ...(options.lookup ? { lookup: options.lookup } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      },
      resolve,
    );
    request.setTimeout(options.idleTimeoutMs ?? 60_000, () =>
      request.destroy(new RetryableError(`no answer within ${options.idleTimeoutMs ?? 60_000} ms`)),
    );
    request.on("error", (err) => reject(err instanceof DownloadError ? err : new RetryableError(err.message)));
    request.end();
  });
}

async function receive(
  options: DownloadOptions,
  response: IncomingMessage,
  url: URL,
  partial: string,
  offset: number,
  expectedSize: number | undefined,
  remember: (validator: string | undefined) => Promise<void>,
): Promise<boolean> {
  const status = response.statusCode ?? 0;
  if (status === 416 && offset > 0) {
    // The partial file is at least as long as the file: either whole already, or from another version.
    response.resume();
    const total = Number(/\/(\d+)$/.exec(response.headers["content-range"] ?? "")?.[1]);
    if (total === offset) return true;
    await rm(partial, { force: true });
    throw new RetryableError(`the server refused to resume at byte ${offset}; starting over`);
  }
  if (status === 404 || status === 410) {
    response.resume();
    throw new DownloadError(`${url.href}: HTTP ${status} (not found)`, "not-found");
  }
  if (status >= 500 || status === 408 || status === 429) {
    response.resume();
    const retryAfter = Number(response.headers["retry-after"]);
    throw new RetryableError(`HTTP ${status}`, Number.isFinite(retryAfter) ? retryAfter * 1000 : undefined);
  }
  if (status !== 200 && status !== 206) {
    response.resume();
    throw new DownloadError(`${url.href}: HTTP ${status}`, "http");
  }

  // 200 to a ranged request: no Range support, or the file changed (If-Range): start over.
  let start = 0;
  let total: number | undefined;
  if (status === 206) {
    const range = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(response.headers["content-range"] ?? "");
    if (!range || Number(range[1]) !== offset) {
      response.resume();
      await rm(partial, { force: true });
      throw new RetryableError(
        `the server resumed at the wrong place (${response.headers["content-range"] ?? "no Content-Range"})`,
      );
    }
    start = offset;
    if (range[3] !== "*") total = Number(range[3]);
  } else if (response.headers["content-length"] !== undefined) {
    total = Number(response.headers["content-length"]);
  }
  if (total !== undefined && expectedSize !== undefined && total !== expectedSize) {
    response.resume();
    throw new DownloadError(`${url.href}: the server has ${total} bytes where ${expectedSize} were expected`, "size");
  }
  if (total !== undefined && options.maxBytes !== undefined && total > options.maxBytes) {
    response.resume();
    throw new DownloadError(`${url.href} is ${total} bytes, over the limit of ${options.maxBytes}`, "too-large");
  }
  await remember(response.headers.etag ?? response.headers["last-modified"]);
  const end = total ?? expectedSize;
  const written = await appendBody(options, response, partial, start, end, offset);
  if (end !== undefined && written < end) throw new RetryableError(`the connection closed at byte ${written} of ${end}`);
  return true;
}

/** Streams a body into the partial file from `start`, counting and bounding it; returns the file's length. */
async function appendBody(
  options: DownloadOptions,
  body: NodeJS.ReadableStream,
  partial: string,
  start: number,
  total: number | undefined,
  resumedFrom: number,
): Promise<number> {
  let received = start;
  const limit = options.maxBytes;
  const out = createWriteStream(partial, { flags: start === 0 ? "w" : "r+", start });
  let lastReport = 0;
  try {
    await pipeline(
      body,
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          received += chunk.length;
          if (limit !== undefined && received > limit)
            throw new DownloadError(`${options.url} is over the limit of ${limit} bytes`, "too-large");
          const now = Date.now();
          if (options.onProgress && now - lastReport >= 200) {
            lastReport = now;
            options.onProgress({ received, resumedFrom, ...(total !== undefined ? { total } : {}) });
          }
          yield chunk;
        }
      },
      out,
      options.signal ? { signal: options.signal } : {},
    );
  } catch (err) {
    // The file's open may still be under way when the body fails early (the limit passed in its
    // first chunk): wait for the stream to close, so that a caller deleting the partial file
    // deletes it after it exists, not before.
    if (!out.closed) await new Promise((resolve) => out.once("close", resolve));
    if (err instanceof DownloadError || options.signal?.aborted) throw err;
    throw new RetryableError(`the transfer broke off at byte ${await sizeOf(partial)} (${(err as Error).message})`);
  }
  options.onProgress?.({ received, resumedFrom, ...(total !== undefined ? { total } : {}) });
  return received;
}

/** A `file:` URL (a local mirror): copied the same way, from where the partial file ends. */
async function copyLocal(options: DownloadOptions, source: string, partial: string, offset: number): Promise<boolean> {
  const size = await stat(source).then(
    (s) => s.size,
    () => {
      throw new DownloadError(`${options.url}: no such file`, "not-found");
    },
  );
  const expectedSize = options.expect?.sizeBytes ?? undefined;
  if (expectedSize !== undefined && size !== expectedSize)
    throw new DownloadError(`${options.url}: the file has ${size} bytes where ${expectedSize} were expected`, "size");
  if (options.maxBytes !== undefined && size > options.maxBytes)
    throw new DownloadError(`${options.url} is ${size} bytes, over the limit of ${options.maxBytes}`, "too-large");
  const start = offset <= size ? offset : 0;
  await appendBody(options, createReadStream(source, { start }), partial, start, size, offset);
  return true;
}
