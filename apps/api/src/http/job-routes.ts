import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { PageRequest } from "@mixdown/db";
import { listOf } from "@mixdown/records";
import { Type } from "typebox";
import { API_PREFIX } from "../app-context.ts";
import { paginationMeta } from "./pagination.ts";
import { bearerSecurity, cancelRouteSchema, errorResponses, IdParams, ListQuery } from "./schemas.ts";

type App = Parameters<FastifyPluginAsyncTypebox>[0];

/** What a job kind's service answers for its caller's own jobs. */
export interface JobReads {
  list(callerId: number, page: PageRequest): Promise<{ rows: unknown[]; total: number }>;
  get(callerId: number, id: number): Promise<unknown>;
  cancel(callerId: number, id: number): Promise<unknown>;
}

/**
 * The three routes every job kind has beside its create, the same for each: `GET /<path>` (the
 * caller's jobs, a page at a time), `GET /<path>/:id` and `POST /<path>/:id/cancel`.
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
    maxPerPage: number;
    /** what a cancel of this kind does besides (`cancelRouteSchema`'s note) */
    cancelNote?: string;
  },
  reads: JobReads,
): void {
  const { path, tags, noun, record } = route;
  app.get(
    `/${path}`,
    {
      schema: {
        tags,
        summary: `List the caller's ${noun} jobs`,
        security: bearerSecurity,
        querystring: ListQuery(route.maxPerPage),
        response: { 200: listOf(record), ...errorResponses(401, 422, 429) },
      },
    },
    async (request) => {
      const { rows, total } = await reads.list(request.auth.caller.id, request.query);
      return { data: rows, meta: paginationMeta(`${API_PREFIX}/${path}`, request.query, total) };
    },
  );

  app.get(
    `/${path}/:id`,
    {
      schema: {
        tags,
        summary: `Fetch one ${noun} job`,
        security: bearerSecurity,
        params: IdParams,
        response: { 200: Type.Ref(record), ...errorResponses(401, 404, 429) },
      },
    },
    (request) => reads.get(request.auth.caller.id, request.params.id),
  );

  app.post(
    `/${path}/:id/cancel`,
    { schema: cancelRouteSchema({ tags, noun, record, ...(route.cancelNote ? { note: route.cancelNote } : {}) }) },
    (request) => reads.cancel(request.auth.caller.id, request.params.id),
  );
}
