import type { IdempotentResource } from "@mixdown/db";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { AppContext } from "../app-context.ts";
import { receiveForm, type FormSpec, type ReceivedForm } from "../uploads/receive-form.ts";
import { canonicalJson, formContent, requestFingerprint } from "./fingerprint.ts";
import { readIdempotencyKey } from "./idempotent-creates.ts";

export interface CreateRoute<R extends { id: number }> {
  /** What the key is bound to: the record kind a replay reads again. */
  resource: IdempotentResource["kind"];
  /** The job kind counted in mixdown_jobs_created_total. */
  jobKind: string;
  /** The create's success status (200 or 201), kept on a replay. */
  status: number;
  /** Reads the record as it is now, for a replay. */
  current(callerId: number, id: number): Promise<R>;
}

function routeOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? request.url.split("?")[0]!;
}

async function answer<R extends { id: number }>(
  ctx: AppContext,
  reply: FastifyReply,
  route: CreateRoute<R>,
  result: { record: R; replayed: boolean },
): Promise<FastifyReply> {
  if (result.replayed) reply.header("idempotent-replayed", "true");
  else ctx.metrics?.countCreated(route.jobKind);
  return reply.code(route.status).send(result.record);
}

/**
 * A multipart create: the Idempotency-Key is checked before the body is read, the form is
 * streamed to TMP_DIR (hashing each file as it arrives), then the create runs or, for a repeated
 * key, the first record is read again. Temporary files are gone before the answer leaves.
 */
export async function multipartCreate<R extends { id: number }>(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  spec: FormSpec,
  route: CreateRoute<R>,
  create: (form: ReceivedForm) => Promise<R>,
): Promise<FastifyReply> {
  const key = readIdempotencyKey(request);
  const form = await receiveForm(request, spec, ctx.config.TMP_DIR);
  const path = routeOf(request);
  let result;
  try {
    for (const file of [...form.files.values(), ...form.fileList]) ctx.metrics?.countUpload(path, file.field, file.size);
    result = await ctx.idempotency.run({
      callerId: request.auth.caller.id,
      key,
      route: path,
      fingerprint: key === undefined ? "" : requestFingerprint(request.method, path, formContent(form)),
      kind: route.resource,
      create: () => create(form),
      current: (id) => route.current(request.auth.caller.id, id),
    });
  } finally {
    await form.cleanup();
  }
  return answer(ctx, reply, route, result);
}

/** A JSON create: as multipartCreate, with the canonical JSON of the validated body as the request's content. */
export async function jsonCreate<R extends { id: number }>(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  route: CreateRoute<R>,
  create: () => Promise<R>,
): Promise<FastifyReply> {
  const key = readIdempotencyKey(request);
  const path = routeOf(request);
  const result = await ctx.idempotency.run({
    callerId: request.auth.caller.id,
    key,
    route: path,
    fingerprint: key === undefined ? "" : requestFingerprint(request.method, path, canonicalJson(request.body)),
    kind: route.resource,
    create,
    current: (id) => route.current(request.auth.caller.id, id),
  });
  return answer(ctx, reply, route, result);
}
