import { STATUS_CODES } from "node:http";
import { isDatabaseUnavailable } from "@mixdown/db";
import { StorageUnavailableError } from "@mixdown/storage";
import type { FastifyError, FastifyInstance } from "fastify";

/** A client-facing failure: its status and message are sent as they are, with `details` beside them in the body. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const badRequest = (message: string) => new ApiError(400, message);
export const unauthorized = (message: string) => new ApiError(401, message, { "www-authenticate": 'Bearer realm="mixdown"' });
export const forbidden = (message: string) => new ApiError(403, message);
export const notFound = (message: string) => new ApiError(404, message);
export const conflict = (message: string, headers: Record<string, string> = {}) => new ApiError(409, message, headers);
export const payloadTooLarge = (message: string) => new ApiError(413, message);
export const unsupportedMediaType = (message: string) => new ApiError(415, message);
export const unprocessable = (message: string) => new ApiError(422, message);
export const tooManyRequests = (message: string, retryAfterSeconds: number) =>
  new ApiError(429, message, { "retry-after": String(retryAfterSeconds) });

export interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
}

export function errorBody(statusCode: number, message: string): ErrorBody {
  return { statusCode, error: STATUS_CODES[statusCode] ?? "Error", message };
}

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** "alpha must be <= 1", "modelId2 is required", "perPage must be integer". */
export function describeValidationError(errors: AjvError[], context: string | undefined): string {
  const first = errors[0];
  if (!first) return `invalid ${context ?? "request"}`;
  const path = first.instancePath.replace(/^\//, "").replace(/\//g, ".");
  if (first.keyword === "required") {
    const missing = String(first.params.missingProperty ?? "");
    return `${path ? `${path}.` : ""}${missing} is required`;
  }
  if (first.keyword === "additionalProperties") {
    return `${path ? `${path}: ` : ""}unknown field ${String(first.params.additionalProperty)}`;
  }
  if (first.keyword === "enum") {
    return `${path || context} must be one of ${(first.params.allowedValues as unknown[]).join(", ")}`;
  }
  if (first.keyword === "type" && !path) return `${context ?? "request"} must be a JSON object`;
  return `${path || context} ${first.message ?? "is invalid"}`;
}

const MULTIPART_CLIENT_ERRORS: Record<string, number> = {
  FST_INVALID_MULTIPART_CONTENT_TYPE: 400,
  FST_PROTO_VIOLATION: 400,
  FST_PARTS_LIMIT: 413,
  FST_FILES_LIMIT: 413,
  FST_FIELDS_LIMIT: 413,
  FST_REQ_FILE_TOO_LARGE: 413,
};

/** What a 503 asks the client to wait before trying again (`Retry-After`). */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

const OUTAGE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH"]);

/**
 * The message of a 503 when Postgres, object storage or another backing service could not be
 * reached (as opposed to a bug); undefined for any other error. Every create writes its row only
 * after storing its upload and deletes the upload when the row cannot be written, so a create
 * answered 503 has stored nothing.
 */
export function outageMessage(err: { name?: string; code?: string; cause?: unknown }): string | undefined {
  const retry = `retry in ${OUTAGE_RETRY_AFTER_SECONDS} seconds`;
  if (err instanceof StorageUnavailableError)
    return `object storage is unavailable (it could not be reached); nothing was stored, ${retry}`;
  if (isDatabaseUnavailable(err)) return `the database is unavailable (PostgreSQL could not be reached); ${retry}`;
  const cause = err.cause as { code?: string } | undefined;
  if ((err.code && OUTAGE_CODES.has(err.code)) || (cause?.code && OUTAGE_CODES.has(cause.code))) {
    return `a backing service is unavailable; ${retry}`;
  }
  return undefined;
}

/**
 * One error shape everywhere: `{ statusCode, error, message }`. Client mistakes keep their 4xx;
 * anything unexpected is logged and answered as a bare 500, never with a stack.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError & { validationContext?: string; headers?: Record<string, string> }, request, reply) => {
    reply.type("application/json; charset=utf-8");
    if (err instanceof ApiError) {
      for (const [name, value] of Object.entries(err.headers)) reply.header(name, value);
      if (err.statusCode >= 500) request.log.warn({ err }, err.message);
      return reply.code(err.statusCode).send({ ...errorBody(err.statusCode, err.message), ...err.details });
    }
    if (err.validation) {
      const message = describeValidationError(err.validation as AjvError[], err.validationContext);
      // A malformed id in the path names no resource: that is a 404, not a validation failure.
      if (err.validationContext === "params") {
        return reply
          .code(404)
          .send(
            errorBody(
              404,
              `${request.url.split("?")[0]} not found: ${message.replace("must be integer", "must be a positive integer")}`,
            ),
          );
      }
      return reply.code(422).send(errorBody(422, message));
    }
    const multipartStatus = err.code ? MULTIPART_CLIENT_ERRORS[err.code] : undefined;
    if (multipartStatus) return reply.code(multipartStatus).send(errorBody(multipartStatus, err.message));
    const status = err.statusCode;
    if (status && status >= 400 && status < 500) {
      return reply.code(status).send(errorBody(status, err.message));
    }
    const outage = outageMessage(err);
    if (outage) {
      // Expected while a service restarts: one line, not a stack per request.
      request.log.warn({ err: err.message }, outage);
      reply.header("retry-after", String(OUTAGE_RETRY_AFTER_SECONDS));
      return reply.code(503).send(errorBody(503, outage));
    }
    request.log.error({ err }, "unhandled error");
    const code = status && status >= 500 && status < 600 ? status : 500;
    return reply.code(code).send(errorBody(code, "internal error"));
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(errorBody(404, `route ${request.method} ${request.url.split("?")[0]} not found`));
  });
}
