import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { IdempotentResource, PageRequest } from "@mixdown/db";
import { listOf } from "@mixdown/records";
import { Type, type TSchema } from "typebox";
import type { RecordKind } from "@mixdown/jobs";
import { API_PREFIX, type AppContext } from "../app-context.ts";
import { jobEventsRoute, streamOptions } from "../events/routes.ts";
import { multipartCreate } from "../idempotency/create-request.ts";
import { jobOrigin, type JobOrigin } from "../jobs/job-origin.ts";
import type { FormSpec, ReceivedForm } from "../uploads/receive-form.ts";
import { documentOnly } from "./multipart-route.ts";
import { paginationMeta } from "./pagination.ts";
import {
  bearerSecurity,
  cancelRouteSchema,
  CreateHeaders,
  createdRecord,
  errorResponses,
  IdParams,
  ListQuery,
  NoContent,
  pageOf,
} from "./schemas.ts";

type App = Parameters<FastifyPluginAsyncTypebox>[0];

/** What a job kind's service answers for its caller's own jobs. */
export interface JobReads {
  list(callerId: number, page: PageRequest): Promise<{ rows: unknown[]; total: number }>;
  get(callerId: number, id: number): Promise<unknown>;
  cancel(callerId: number, id: number): Promise<unknown>;
  delete(callerId: number, id: number): Promise<void>;
}

/**
 * The five routes every job kind has beside its create, the same for each: `GET /<path>` (the
 * caller's jobs, a page at a time), `GET /<path>/:id`, `GET /<path>/:id/events` (its changes as
 * Server-Sent Events), `POST /<path>/:id/cancel` and `DELETE /<path>/:id`.
 */
export function jobReadRoutes(
  app: App,
  route: {
    path: string;
    tags: string[];
    /** the kind as the summaries name it ("voice conversion") */
    noun: string;
    /** the record's schema id (`VoiceConversionJob`) */
    record: string;
    /** the record kind its rows' job events name (`voice_conversion`) */
    recordKind: RecordKind;
    /**
     * One job in the operations' ids (`VoiceConversion`: listVoiceConversions, getVoiceConversion,
     * cancelVoiceConversion). Clients generated from the document name their methods after them:
     * changing one is a breaking change.
     */
    operation: string;
    /** Jobs in the list's operation id, where adding an `s` is wrong (`AudioAnalyses`); default `<operation>s`. */
    operations?: string;
    maxPerPage: number;
    /** what a cancel of this kind does besides (`cancelRouteSchema`'s note) */
    cancelNote?: string;
    /** what a delete of this kind does besides; a kind with one may answer 409 (its reason is in the note) */
    deleteNote?: string;
  },
  reads: JobReads,
  ctx: Pick<AppContext, "jobEvents" | "config">,
): void {
  const { path, tags, noun, record, operation } = route;
  app.get(
    `/${path}`,
    {
      schema: {
        tags,
        operationId: `list${route.operations ?? `${operation}s`}`,
        summary: `List the caller's ${noun} jobs`,
        description: `The caller's own ${noun} jobs, a page at a time in id (creation) order, with \`meta\` holding the total and the links of the pages around this one. Every query parameter is optional.`,
        security: bearerSecurity,
        querystring: ListQuery(route.maxPerPage),
        response: { 200: listOf(record), ...errorResponses(401, 422, 429) },
      },
    },
    async (request) => {
      const page = pageOf(request.query);
      const { rows, total } = await reads.list(request.auth.caller.id, page);
      return { data: rows, meta: paginationMeta(`${API_PREFIX}/${path}`, page, total) };
    },
  );

  app.get(
    `/${path}/:id`,
    {
      schema: {
        tags,
        operationId: `get${operation}`,
        summary: `Fetch one ${noun} job`,
        description: `The caller's ${noun} job as it is now: poll it until \`status\` is no longer \`running\`; its output URLs are signed and expire (fetch the record again for fresh ones). 404 when the job is not the caller's.`,
        security: bearerSecurity,
        params: IdParams,
        response: { 200: Type.Ref(record), ...errorResponses(401, 404, 429) },
      },
    },
    (request) => reads.get(request.auth.caller.id, request.params.id),
  );

  jobEventsRoute(app, route, (callerId, id) => reads.get(callerId, id), {
    hub: ctx.jobEvents,
    options: streamOptions(ctx.config),
  });

  app.post(
    `/${path}/:id/cancel`,
    {
      schema: cancelRouteSchema({
        tags,
        noun,
        record,
        operationId: `cancel${operation}`,
        ...(route.cancelNote ? { note: route.cancelNote } : {}),
      }),
    },
    (request) => reads.cancel(request.auth.caller.id, request.params.id),
  );

  app.delete(
    `/${path}/:id`,
    {
      schema: {
        tags,
        operationId: `delete${operation}`,
        summary: `Delete a ${noun} job and its files`,
        description:
          `Deletes the caller's ${noun} job for good: a running job is cancelled first (its worker stops and discards what it had written), then its uploaded input, every output file and the row go, with the idempotency keys that named it and any webhook of it not yet delivered (dropped, not sent). Answers 204 with an empty body. 404 when the job is not the caller's, and for a second delete of the same job: deleting is idempotent in effect.` +
          (route.deleteNote ? ` ${route.deleteNote}` : "") +
          " 503 with `Retry-After` while object storage cannot be reached: the job may be partly deleted then, and the deletion is finished by a retry or, within DELETION_RETRY_SECONDS, by the service itself.",
        security: bearerSecurity,
        params: IdParams,
        response: {
          204: NoContent("Deleted: no body"),
          ...errorResponses(...(route.deleteNote ? [401, 404, 409, 429, 503] : [401, 404, 429, 503])),
        },
      },
    },
    async (request, reply) => {
      await reads.delete(request.auth.caller.id, request.params.id);
      return reply.code(204).send();
    },
  );
}

/**
 * A job kind's create from a multipart form: `POST /<path>` with the file parts `files` and the
 * text fields of `form` (its schema is the document's body), run through the caller's
 * Idempotency-Key, answering the created record with `status` (200 for the kinds the hosted
 * service answers so, 201 for the rest). `kind` names the record kind for the key and the metrics.
 */
export function multipartJobCreateRoute<F, R extends { id: number }>(
  app: App,
  ctx: AppContext,
  route: {
    path: string;
    tags: string[];
    operationId: string;
    summary: string;
    description: string;
    form: { body: TSchema; textFields: string[]; read(received: ReceivedForm): F };
    files: FormSpec["files"];
    record: string;
    status: 200 | 201;
    kind: IdempotentResource["kind"];
    service: { get(callerId: number, id: number): Promise<R>; create(origin: JobOrigin, form: F): Promise<R> };
  },
): void {
  const { form, service } = route;
  app.post(
    `/${route.path}`,
    {
      schema: {
        tags: route.tags,
        operationId: route.operationId,
        summary: route.summary,
        description: route.description,
        security: bearerSecurity,
        consumes: ["multipart/form-data"],
        headers: CreateHeaders,
        body: form.body,
        response: {
          ...(route.status === 201 ? { 201: createdRecord(route.record) } : { 200: Type.Ref(route.record) }),
          ...errorResponses(400, 401, 409, 413, 415, 422, 429),
        },
      },
      validatorCompiler: documentOnly,
    },
    (request, reply) =>
      multipartCreate(
        ctx,
        request,
        reply,
        { files: route.files, textFields: form.textFields },
        { resource: route.kind, jobKind: route.kind, status: route.status, current: (callerId, id) => service.get(callerId, id) },
        (received) =>
          service.create(jobOrigin(request, received.fields.get("webhookUrl"), ctx.webhookPolicy), form.read(received)),
      ),
  );
}
