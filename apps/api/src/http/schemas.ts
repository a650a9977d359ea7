import { Type, type TProperties, type TSchema } from "typebox";
// The record fields live with the records (the worker presents them too, for webhooks).
export { JobStatus, Nullable, PaginationMeta, SignedUrl, Timestamp } from "@mixdown/records";

export const ErrorResponse = Type.Object(
  {
    statusCode: Type.Integer(),
    error: Type.String(),
    message: Type.String({ description: "What was wrong, naming the field" }),
    quota: Type.Optional(
      Type.Object(
        {
          apiKeyId: Type.Integer({ description: "The key whose quota it is" }),
          minutes: Type.Integer({ description: "The key's monthly quota, minutes of audio" }),
          usedSeconds: Type.Number({ description: "Seconds of this month's successful jobs" }),
          runningSeconds: Type.Number({ description: "Seconds held by the key's jobs still running" }),
          requestedSeconds: Type.Number({ description: "Seconds the refused job would have taken" }),
          remainingSeconds: Type.Number({ description: "What a job may still take this month" }),
          resetsAt: Type.String({ format: "date-time", description: "When the month ends (UTC) and the quota starts again" }),
        },
        { description: "Present on a 429 that refused a create over its API key's monthly quota (see GET /usage)" },
      ),
    ),
  },
  { $id: "Error", description: "Every error response" },
);

export const IdParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: 2147483647, description: "Numeric id" }),
});

/** What a list's absent query parameters mean (the document's defaults, and pageOf's). */
const LIST_DEFAULTS = { order: "asc", page: 1, perPage: 10 } as const;

export const ListQuery = <T extends TProperties = {}>(maxPerPage: number, extra: T = {} as T) =>
  Type.Object({
    ...extra,
    order: Type.Optional(
      Type.Enum(["asc", "desc"], {
        type: "string",
        default: LIST_DEFAULTS.order,
        description: "Sort direction on id (= creation order)",
      }),
    ),
    page: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000_000, default: LIST_DEFAULTS.page, description: "1-based page number" }),
    ),
    perPage: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: maxPerPage,
        default: LIST_DEFAULTS.perPage,
        description: `Page size (max ${maxPerPage})`,
      }),
    ),
  });

/**
 * The page a list's query asks for. The parameters are optional in the document; the validator
 * has filled in the defaults above when they are absent, and this says so to the types.
 */
export function pageOf<Q extends { order?: "asc" | "desc"; page?: number; perPage?: number }>(query: Q) {
  return {
    ...query,
    order: query.order ?? LIST_DEFAULTS.order,
    page: query.page ?? LIST_DEFAULTS.page,
    perPage: query.perPage ?? LIST_DEFAULTS.perPage,
  };
}

const errorRef = Type.Ref("Error");

/**
 * Marks a response header that every answer of its status sends: the document's header object
 * then says `required: true` (`documentedObject`, http/openapi-layout.ts, moves the mark there).
 * A header without it is sent on some answers only (OpenAPI's default).
 */
export const SENT_ON_EVERY_ANSWER = "x-mixdown-sent-always";
export const alwaysSent = <T extends TSchema>(schema: T): T => ({ ...schema, [SENT_ON_EVERY_ANSWER]: true });

const retryAfter = alwaysSent(Type.Integer({ minimum: 1, description: "Seconds to wait before sending the request again" }));

/** The headers of a rate-limited key's answers (rate-limit/rate-limit.ts). */
const rateLimitHeaders = {
  "X-RateLimit-Limit": Type.Integer({
    minimum: 1,
    description: "Requests a minute this key may send of this kind (reads or writes)",
  }),
  "X-RateLimit-Remaining": Type.Integer({ minimum: 0, description: "Requests left in the current minute" }),
  "X-RateLimit-Reset": Type.Integer({ minimum: 1, description: "Seconds until the minute's count starts again" }),
};

/**
 * An error response whose answer also carries `Retry-After` (seconds), as every 429 and 503 does
 * (http/errors.ts, rate-limit, usage/quota.ts): a response object with its description and
 * headers, the body the `Error` shape (Fastify serializes it as it does a bare `Error` ref).
 */
export function errorWithRetryAfter(
  description: string,
  headers: Record<string, TSchema> = {},
  body: TSchema = errorRef,
): TSchema {
  return Type.Unsafe({
    description,
    headers: { "Retry-After": retryAfter, ...headers },
    content: { "application/json": { schema: body } },
  });
}

const RETRY_AFTER_ERRORS: Record<number, () => TSchema> = {
  429: () =>
    errorWithRetryAfter(
      "Too many requests: over the API key's rate limit (the answer then also carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`) or, for a create, over its monthly quota (the body's `quota` says by how much). `Retry-After` says when to try again.",
      rateLimitHeaders,
    ),
  503: () =>
    errorWithRetryAfter(
      "The database or object storage is unavailable for a moment; a create answered 503 has stored nothing. `Retry-After` says when to try again.",
    ),
};

/**
 * A create's success: the record it made, or, for a repeat of an earlier request with the same
 * `Idempotency-Key`, the record that request made, with `Idempotent-Replayed: true`.
 */
export function createdRecord(record: string): TSchema {
  return Type.Unsafe({
    description: `The ${record} created (or, for a repeat with the same Idempotency-Key, the one the first request created)`,
    headers: {
      "Idempotent-Replayed": Type.Literal("true", {
        description: "Sent on a repeat of an earlier request with the same Idempotency-Key: nothing new was created",
      }),
    },
    content: { "application/json": { schema: Type.Ref(record) } },
  });
}

/** Error responses for the OpenAPI document (every one has the `Error` shape; 429 and 503 `Retry-After` too). */
export function errorResponses(...codes: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const code of codes) {
    out[code] = RETRY_AFTER_ERRORS[code]?.() ?? errorRef;
  }
  return out;
}

/**
 * A 204's schema: no body. Typed `void` so that the handler sends none (`reply.code(204).send()`):
 * a `null` would be serialized as the four bytes `null` with a JSON Content-Type.
 */
export const NoContent = (description: string) => Type.Unsafe<void>({ type: "null", description });

export const bearerSecurity = [{ bearerAuth: [] as string[] }];

/** The headers every create route documents. Checked by the handler (400), not by the schema. */
export const CreateHeaders = Type.Object({
  "idempotency-key": Type.Optional(
    Type.String({
      description:
        "Optional, 1 to 255 characters, e.g. a UUID. Within 24 hours a repeat of the same request with the same key (same caller) creates nothing and answers with the record the first request created, in its current state, and the header `Idempotent-Replayed: true`. The same key with a different request, or while the first is still being processed, answers 409. A create that fails does not use up its key.",
    }),
  ),
});

/**
 * The schema of a `POST …/:id/cancel` route: what every job kind's cancel promises, with a note
 * for what a kind adds (a blend's output model ends `failed`).
 */
export function cancelRouteSchema(options: { tags: string[]; noun: string; record: string; operationId: string; note?: string }) {
  return {
    tags: options.tags,
    operationId: options.operationId,
    summary: `Cancel a running ${options.noun} job`,
    description:
      "Only a `running` job (queued or being processed) can be cancelled: it ends `cancelled` at once and the answer is its record with that status. The worker processing it stops within a couple of seconds and publishes no outputs; a job still waiting in the queue is never started." +
      (options.note ? ` ${options.note}` : "") +
      " A job that has already ended (`success`, `error`, `cancelled`) answers 409 naming its status.",
    security: bearerSecurity,
    params: IdParams,
    response: { 200: Type.Ref(options.record), ...errorResponses(401, 404, 409, 429) },
  };
}
