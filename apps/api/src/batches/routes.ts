import { dirname } from "node:path";
import type { Readable } from "node:stream";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { BatchRepository } from "@mixdown/db";
import { SEPARATION_KINDS, type SeparationKind } from "@mixdown/jobs";
import { listOf } from "@mixdown/records";
import { Type } from "typebox";
import { API_PREFIX, type AppContext } from "../app-context.ts";
import { conflict, payloadTooLarge, unprocessable } from "../http/errors.ts";
import { acceptUrlencodedForms } from "../http/plain-form.ts";
import { FilePart, FormSchema } from "../http/form-schema.ts";
import { documentOnly, TEXT_PARTS_AS_FILES } from "../http/multipart-route.ts";
import { paginationMeta } from "../http/pagination.ts";
import {
  bearerSecurity,
  CreateHeaders,
  createdRecord,
  errorResponses,
  IdParams,
  ListQuery,
  NoContent,
  pageOf,
} from "../http/schemas.ts";
import { jsonCreate, multipartCreate, type CreateRoute } from "../idempotency/create-request.ts";
import type { CallerDeletions } from "../jobs/caller-deletions.ts";
import type { JobCancels } from "../jobs/job-cancels.ts";
import { jobOrigin } from "../jobs/job-origin.ts";
import { separationForm } from "../kinds/separation/routes.ts";
import type { SeparationService } from "../kinds/separation/service.ts";
import type { UsageQuota } from "../usage/quota.ts";
import type { BatchRecord, RecordPresenter } from "@mixdown/records";
import { MAX_WEBHOOK_URL_LENGTH } from "@mixdown/webhooks";
import type { FastifyRequest } from "fastify";
import type { ReceivedFile } from "../uploads/receive-form.ts";
import { BatchService } from "./service.ts";
import { batchZipEntries, streamBatchZip } from "./zip.ts";
import { unpackZipInput } from "./zip-input.ts";

const TAGS = ["Batches"];
const KIND_NAMES = Object.keys(SEPARATION_KINDS) as SeparationKind[];

/**
 * A batch's text fields: its `kind`, then the kind's own create form but its file, as that form
 * declares them (so an option added to a separation is a batch's option too, checked the same way).
 */
function batchFields(maxMb: number) {
  const { inputFile: _file, ...options } = separationForm(maxMb).properties;
  return Type.Object({
    kind: Type.String({
      enum: KIND_NAMES,
      description: "The kind of every job of the batch: `vocal-separation` or `stem-split`",
    }),
    ...options,
  });
}

const ZipBytes = Type.Unsafe<Readable>({ type: "string", format: "binary" });

/** Room for MAX_BATCH_FILES links of the longest kind, and the other fields, in a urlencoded body. */
const LINKS_BODY_BYTES = (maxLinks: number) => 64 * 1024 + maxLinks * (MAX_WEBHOOK_URL_LENGTH + 16);

/** A field's links: one per line, blank lines skipped. */
function linesOf(value: string | undefined): string[] {
  return (value ?? "")
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);
}

/** The links of a urlencoded body (`urls` lines) or a JSON body (`urls`: an array of strings, or one string). */
function linksOfBody(body: unknown): string[] {
  const urls = typeof body === "object" && body !== null ? (body as Record<string, unknown>).urls : undefined;
  if (urls === undefined || urls === null) return [];
  if (typeof urls === "string") return linesOf(urls);
  if (!Array.isArray(urls) || urls.some((u) => typeof u !== "string"))
    throw unprocessable("urls must be an array of links (strings)");
  return urls.flatMap((u: string) => linesOf(u));
}

/** `/batches`: create (multipart, many files), list, fetch, cancel, delete, and the zip of every output. */
export const batchRoutes: FastifyPluginAsyncTypebox<{
  ctx: AppContext;
  separations: SeparationService;
  deps: { cancels: JobCancels; deletions: CallerDeletions; presenter: RecordPresenter; quota: UsageQuota };
}> = async (app, { ctx, separations, deps }) => {
  const { config } = ctx;
  const service = new BatchService({
    ...deps,
    batches: new BatchRepository(ctx.prisma),
    separations,
    maxJobsInFlight: config.MAX_CALLER_JOBS_IN_FLIGHT,
    linkPolicy: ctx.webhookPolicy,
  });
  const maxMb = Math.round(config.MAX_SEPARATION_UPLOAD_BYTES / 1024 / 1024);
  const fields = batchFields(maxMb);
  const form = new FormSchema(fields, {
    kind: { enum: ({ raw }) => `kind ${JSON.stringify(raw)} is not a batch's kind (one of ${KIND_NAMES.join(", ")})` },
  });
  const body = Type.Object({
    ...fields.properties,
    files: Type.Optional(
      Type.Array(FilePart(`wav, webm, mp3 or flac; max ${maxMb} MB each`), {
        minItems: 1,
        maxItems: config.MAX_BATCH_FILES,
        description: `One part per file, all under this name: at most ${config.MAX_BATCH_FILES} (MAX_BATCH_FILES) and ${Math.round(config.MAX_BATCH_BYTES / 1024 / 1024)} MB together (MAX_BATCH_BYTES). Or send \`zip\` instead`,
      }),
    ),
    zip: Type.Optional(
      FilePart(
        "Instead of `files`: one zip holding the files (folders, `__MACOSX/` and hidden files skipped), held unpacked to the same limits",
      ),
    ),
    urls: Type.Optional(
      Type.Array(Type.String({ format: "uri", maxLength: MAX_WEBHOOK_URL_LENGTH }), {
        maxItems: config.MAX_BATCH_FILES,
        description: `Links to audio files, instead of or beside \`files\` / \`zip\`: one \`urls\` field per link (a field may also hold several, one per line; a JSON body's \`urls\` is an array). Each is checked as a voice model's \`modelUrl\` is (absolute http(s), no credentials, at most ${MAX_WEBHOOK_URL_LENGTH} characters, not a literal address in WEBHOOK_DENIED_NETWORKS; a refused one is listed in \`rejected\`) and becomes one job, whose input the worker downloads before it runs (at most ${maxMb} MB, MAX_SEPARATION_UPLOAD_BYTES; every redirect and the address connected to checked again). A link that cannot be downloaded, is too big or too long, or is not audio fails its own job, with the reason as its \`errorMessage\`. Files and links count together towards MAX_BATCH_FILES`,
      }),
    ),
  });
  const limits = {
    maxBytes: config.MAX_SEPARATION_UPLOAD_BYTES,
    maxFiles: config.MAX_BATCH_FILES,
    maxTotalBytes: config.MAX_BATCH_BYTES,
  };
  // A batch of links alone has text fields only: a urlencoded form or a JSON object may carry it.
  acceptUrlencodedForms(app, LINKS_BODY_BYTES(config.MAX_BATCH_FILES), ["urls"]);

  /** The create itself, once the form is read: the files (unpacked from a zip) and the links. */
  const create = async (request: FastifyRequest, fields: Map<string, string>, files: ReceivedFile[], links: string[]) => {
    if (files.length + links.length > config.MAX_BATCH_FILES)
      throw payloadTooLarge(`a batch takes at most ${config.MAX_BATCH_FILES} files and links together (MAX_BATCH_FILES)`);
    const { kind, ...options } = form.read({ fields });
    const origin = jobOrigin(request, fields.get("webhookUrl"), ctx.webhookPolicy);
    return service.create(origin, kind as SeparationKind, options, files, links);
  };
  const route: CreateRoute<BatchRecord> = {
    resource: "batch",
    jobKind: "batch",
    status: 200,
    current: (callerId, id) => service.get(callerId, id),
  };

  app.post(
    "/batches",
    {
      schema: {
        tags: TAGS,
        operationId: "createBatch",
        summary: "Create a batch: one job per file or link",
        description: `Mixdown. Multipart form with a \`kind\` (\`vocal-separation\` or \`stem-split\`), the kind's own options (\`model\`, \`ensemble\`, \`analyze\`, \`webhookUrl\`: the same fields, rules and 422s as its own create, applied to every job) and one file part \`files\` per input (or one \`zip\` part holding them), or instead or beside them one \`urls\` field per link to an audio file (a batch of links alone may also come as a urlencoded form or a JSON object \`{"kind": ..., "urls": [...], ...options}\`). Creates an ordinary job of the kind per file and per link (files first), listed, fetched, cancelled, deleted and webhooked as any, and answers the batch. A file that is not audio (or too long) makes no job: it is listed in \`rejected\` with the reason its own create would have given, as is a link refused by the rules of a voice model's \`modelUrl\`; when nothing is accepted the answer is 422 and nothing is stored. A link's job downloads its input first (its record's \`inputUrl\` names the link): a link that cannot be downloaded or is not audio fails that job alone, and counts in the batch's \`counts\` as any failed job. 413 past MAX_BATCH_FILES files and links or MAX_BATCH_BYTES in all (or a file past ${maxMb} MB); 429 when the caller would have more than MAX_CALLER_JOBS_IN_FLIGHT running jobs, or over the key's monthly quota. The batch's jobs wait their turn with other callers' jobs: another key's job is not held up behind a big batch. ${TEXT_PARTS_AS_FILES}`,
        security: bearerSecurity,
        consumes: ["multipart/form-data", "application/x-www-form-urlencoded", "application/json"],
        headers: CreateHeaders,
        body,
        response: { 200: createdRecord("Batch"), ...errorResponses(400, 401, 409, 413, 422, 429) },
      },
      validatorCompiler: documentOnly,
    },
    (request, reply) => {
      if (!request.isMultipart()) {
        const body = request.body;
        const fields = form.fieldsOf(body);
        return jsonCreate(ctx, request, reply, route, () => create(request, fields, [], linksOfBody(body)));
      }
      return multipartCreate(
        ctx,
        request,
        reply,
        {
          files: { zip: { maxBytes: config.MAX_BATCH_BYTES } },
          textFields: [...form.textFields, "urls"],
          many: { field: "files", ...limits, settings: { maxFiles: "MAX_BATCH_FILES", maxTotalBytes: "MAX_BATCH_BYTES" } },
          repeated: { names: ["urls"], max: config.MAX_BATCH_FILES },
        },
        route,
        async (received) => {
          const zip = received.files.get("zip");
          if (zip && received.fileList.length > 0) {
            throw unprocessable("send a batch's files either as `files` parts or as one `zip`, not both");
          }
          const files = zip ? await unpackZipInput(zip, dirname(zip.path), limits) : received.fileList;
          return create(request, received.fields, files, linesOf(received.fields.get("urls")));
        },
      );
    },
  );

  app.get(
    "/batches",
    {
      schema: {
        tags: TAGS,
        operationId: "listBatches",
        summary: "List the caller's batches",
        description:
          "The caller's own batches, a page at a time in id (creation) order, each as `GET /batches/:id` answers it, with `meta` as every list's.",
        security: bearerSecurity,
        querystring: ListQuery(config.MAX_PER_PAGE),
        response: { 200: listOf("Batch"), ...errorResponses(401, 422, 429) },
      },
    },
    async (request) => {
      const page = pageOf(request.query);
      const { rows, total } = await service.list(request.auth.caller.id, page);
      return { data: rows, meta: paginationMeta(`${API_PREFIX}/batches`, page, total) };
    },
  );

  app.get(
    "/batches/:id",
    {
      schema: {
        tags: TAGS,
        operationId: "getBatch",
        summary: "Fetch one batch",
        description:
          "The batch as it is now: its jobs (id, file name, status, progress), counts by status, overall progress, the files it refused, and, once every job has ended, `zipUrl`. 404 when it is not the caller's.",
        security: bearerSecurity,
        params: IdParams,
        response: { 200: Type.Ref("Batch"), ...errorResponses(401, 404, 429) },
      },
    },
    (request) => service.get(request.auth.caller.id, request.params.id),
  );

  app.post(
    "/batches/:id/cancel",
    {
      schema: {
        tags: TAGS,
        operationId: "cancelBatch",
        summary: "Cancel a batch's running jobs",
        description:
          "Cancels every job of the batch still `running` as a job's own cancel does (each ends `cancelled`, its worker stops, a waiting one never starts) and answers the batch. Jobs that had ended stay as they were. 409 when none was running.",
        security: bearerSecurity,
        params: IdParams,
        response: { 200: Type.Ref("Batch"), ...errorResponses(401, 404, 409, 429) },
      },
    },
    (request) => service.cancel(request.auth.caller.id, request.params.id),
  );

  app.delete(
    "/batches/:id",
    {
      schema: {
        tags: TAGS,
        operationId: "deleteBatch",
        summary: "Delete a batch and its jobs",
        description:
          "Deletes every job of the batch as `DELETE` of the job does (a running one cancelled first; its input, outputs, row, idempotency keys and undelivered webhooks go), then the batch. 204, no body; 404 when it is not the caller's (also for a second delete). 503 with `Retry-After` while object storage cannot be reached: some jobs may be gone, the batch stays, and a retry finishes it.",
        security: bearerSecurity,
        params: IdParams,
        response: { 204: NoContent("Deleted: no body"), ...errorResponses(401, 404, 429, 503) },
      },
    },
    async (request, reply) => {
      await service.delete(request.auth.caller.id, request.params.id);
      return reply.code(204).send();
    },
  );

  app.get(
    "/batches/:id/zip",
    {
      schema: {
        tags: TAGS,
        operationId: "getBatchZip",
        summary: "Download every output of a batch as one zip",
        description:
          "Once every job of the batch has ended: one zip (streamed as it is read, stored entries) of every output of its successful jobs, a folder per input file named `<n>-<file name>` in the batch's order, each holding that job's files as its record lists them. 409 while a job still runs, or when no job succeeded. 404 when it is not the caller's.",
        security: bearerSecurity,
        params: IdParams,
        response: {
          200: {
            description: "The zip",
            headers: {
              "Content-Disposition": Type.String({ description: '`attachment; filename="batch-<id>.zip"`' }),
            },
            content: { "application/zip": { schema: ZipBytes } },
          },
          ...errorResponses(401, 404, 409, 429),
        },
      },
    },
    async (request, reply) => {
      const batch = await service.find(request.auth.caller.id, request.params.id);
      const running = batch.jobs.filter((j) => j.status === "running").length;
      if (running > 0) {
        throw conflict(
          `batch ${batch.id} is still running (${running} of ${batch.jobs.length} jobs); its zip is ready once every job has ended`,
        );
      }
      const entries = batchZipEntries(batch);
      if (entries.length === 0)
        throw conflict(`batch ${batch.id} has no outputs: none of its jobs succeeded (or their outputs have expired)`);
      reply.header("content-type", "application/zip");
      reply.header("content-disposition", `attachment; filename="batch-${batch.id}.zip"`);
      return reply.send(streamBatchZip(ctx.storage, entries));
    },
  );
};
