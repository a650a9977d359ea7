import { dirname } from "node:path";
import type { Readable } from "node:stream";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { BatchRepository } from "@mixdown/db";
import { SEPARATION_KINDS, type SeparationKind } from "@mixdown/jobs";
import { listOf } from "@mixdown/records";
import { Type } from "typebox";
import { API_PREFIX, type AppContext } from "../app-context.ts";
import { conflict, unprocessable } from "../http/errors.ts";
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
import { multipartCreate } from "../idempotency/create-request.ts";
import type { CallerDeletions } from "../jobs/caller-deletions.ts";
import type { JobCancels } from "../jobs/job-cancels.ts";
import { jobOrigin } from "../jobs/job-origin.ts";
import { separationForm } from "../kinds/separation/routes.ts";
import type { SeparationService } from "../kinds/separation/service.ts";
import type { UsageQuota } from "../usage/quota.ts";
import type { RecordPresenter } from "@mixdown/records";
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
  });
  const limits = {
    maxBytes: config.MAX_SEPARATION_UPLOAD_BYTES,
    maxFiles: config.MAX_BATCH_FILES,
    maxTotalBytes: config.MAX_BATCH_BYTES,
  };

  app.post(
    "/batches",
    {
      schema: {
        tags: TAGS,
        operationId: "createBatch",
        summary: "Create a batch: one job per file",
        description: `Mixdown. Multipart form with a \`kind\` (\`vocal-separation\` or \`stem-split\`), the kind's own options (\`model\`, \`ensemble\`, \`analyze\`, \`webhookUrl\`: the same fields, rules and 422s as its own create, applied to every job) and one file part \`files\` per input (or one \`zip\` part holding them). Creates an ordinary job of the kind per file, listed, fetched, cancelled, deleted and webhooked as any, and answers the batch. A file that is not audio (or too long) makes no job: it is listed in \`rejected\` with the reason its own create would have given; when no file is audio the answer is 422 and nothing is stored. 413 past MAX_BATCH_FILES files or MAX_BATCH_BYTES in all (or a file past ${maxMb} MB); 429 when the caller would have more than MAX_CALLER_JOBS_IN_FLIGHT running jobs, or over the key's monthly quota. The batch's jobs wait their turn with other callers' jobs: another key's job is not held up behind a big batch. ${TEXT_PARTS_AS_FILES}`,
        security: bearerSecurity,
        consumes: ["multipart/form-data"],
        headers: CreateHeaders,
        body,
        response: { 200: createdRecord("Batch"), ...errorResponses(400, 401, 409, 413, 422, 429) },
      },
      validatorCompiler: documentOnly,
    },
    (request, reply) =>
      multipartCreate(
        ctx,
        request,
        reply,
        {
          files: { zip: { maxBytes: config.MAX_BATCH_BYTES } },
          textFields: form.textFields,
          many: { field: "files", ...limits, settings: { maxFiles: "MAX_BATCH_FILES", maxTotalBytes: "MAX_BATCH_BYTES" } },
        },
        { resource: "batch", jobKind: "batch", status: 200, current: (callerId, id) => service.get(callerId, id) },
        async (received) => {
          const { kind, ...options } = form.read(received);
          const origin = jobOrigin(request, received.fields.get("webhookUrl"), ctx.webhookPolicy);
          const zip = received.files.get("zip");
          if (zip && received.fileList.length > 0) {
            throw unprocessable("send a batch's files either as `files` parts or as one `zip`, not both");
          }
          const files = zip ? await unpackZipInput(zip, dirname(zip.path), limits) : received.fileList;
          return service.create(origin, kind as SeparationKind, options, files);
        },
      ),
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
