import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { installedEntries, type ModelCatalogue, type VoiceAssetPaths } from "@mixdown/model-catalogue";
import type { ModelInstall, ModelInstallRepository } from "@mixdown/db";
import { formatTimestamp, JobStatus, listOf, Nullable, Timestamp } from "@mixdown/records";
import { Type, type Static } from "typebox";
import { API_PREFIX } from "../app-context.ts";
import { requireOperator } from "../auth/operator.ts";
import { conflict, notFound, unprocessable } from "../http/errors.ts";
import { paginationMeta } from "../http/pagination.ts";
import { bearerSecurity, errorResponses, IdParams, ListQuery, pageOf } from "../http/schemas.ts";
import type { JobSubmitter } from "../jobs/job-submitter.ts";

export const ModelInstallRecord = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String({ description: "The model catalogue entry being installed" }),
    status: JobStatus,
    progress: Type.Integer({
      minimum: 0,
      maximum: 100,
      description: "Percent: the files' bytes downloaded and verified (to 90), then the install (100 at `success`)",
    }),
    errorMessage: Nullable(
      Type.String({ description: "Why it failed (status `error`): a hash that did not match, a file not found, ..." }),
    ),
    summary: Nullable(Type.String({ description: "What the installer said once it succeeded" })),
    createdAt: Timestamp,
    jobStartTime: Nullable(Timestamp),
    jobEndTime: Nullable(Timestamp),
  },
  {
    $id: "ModelInstall",
    description:
      "An install of a model catalogue entry, run by a worker exactly as `./mixdown.sh models pull NAME` runs it: downloaded, checked against the catalogue's sizes and hashes, installed in MODELS_DIR",
  },
);
export type ModelInstallRecord = Static<typeof ModelInstallRecord>;

export function presentModelInstall(row: ModelInstall): ModelInstallRecord {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    progress: row.progress,
    errorMessage: row.errorMessage,
    summary: row.summary,
    createdAt: formatTimestamp(row.createdAt),
    jobStartTime: formatTimestamp(row.jobStartTime),
    jobEndTime: formatTimestamp(row.jobEndTime),
  };
}

export interface ModelInstallRouteOptions {
  catalogue: ModelCatalogue;
  modelsDir: string;
  assets: VoiceAssetPaths;
  installs: ModelInstallRepository;
  submitter: JobSubmitter;
  maxPerPage: number;
}

const InstallBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200, description: "A model catalogue entry's name (GET /model-catalogue)" }) },
  { additionalProperties: false },
);

/** `/model-installs`: an operator installs a catalogue model on the server, as a job the workers run. */
export const modelInstallRoutes: FastifyPluginAsyncTypebox<ModelInstallRouteOptions> = async (app, options) => {
  const { catalogue, installs } = options;
  const tags = ["Model installs"];
  const operatorOnly = "Operator keys only (`keys create --operator`): any other key is answered 403.";

  app.post(
    "/model-installs",
    {
      schema: {
        tags,
        operationId: "createModelInstall",
        summary: "Install a model of the catalogue on the server",
        description: `Queues the install of a model catalogue entry: a worker downloads its files (through MIXDOWN_MODEL_MIRROR when set, resuming a cut download), checks each against the size and hashes the catalogue publishes, and installs it with its family's importer into MODELS_DIR, exactly as \`./mixdown.sh models pull NAME\` does. Answers 202 with the new install; while an install of the same name is running, 200 with that one (nothing new is queued). A name not in the catalogue is a 422 and one already installed a 409; neither queues anything. Poll \`GET /model-installs/{id}\` for its progress. ${operatorOnly}`,
        security: bearerSecurity,
        body: InstallBody,
        response: {
          200: Type.Ref("ModelInstall"),
          202: Type.Ref("ModelInstall"),
          ...errorResponses(400, 401, 403, 409, 422, 429),
        },
      },
    },
    async (request, reply) => {
      requireOperator(request, "Installing a model");
      const { name } = request.body;
      const entry = catalogue.models.find((m) => m.name === name);
      if (!entry) throw unprocessable(`name: "${name}" is not in the model catalogue (GET /model-catalogue lists it)`);
      const installed = await installedEntries(catalogue, options.modelsDir, options.assets);
      if (installed.has(name)) throw conflict(`name: ${name} is installed already`);
      const { install, created } = await installs.start(name, request.auth.apiKeyId);
      if (created) {
        await options.submitter.submit({ queue: "model-install", payload: { installId: install.id } }, () =>
          installs.markEnqueued(install.id),
        );
      }
      return reply.code(created ? 202 : 200).send(presentModelInstall((await installs.find(install.id)) ?? install));
    },
  );

  app.get(
    "/model-installs",
    {
      schema: {
        tags,
        operationId: "listModelInstalls",
        summary: "List the model installs, newest last by default",
        description: `Every install asked for on this server, by whichever operator key, a page at a time in id order. ${operatorOnly}`,
        security: bearerSecurity,
        querystring: ListQuery(options.maxPerPage),
        response: { 200: listOf("ModelInstall"), ...errorResponses(401, 403, 422, 429) },
      },
    },
    async (request) => {
      requireOperator(request, "Listing model installs");
      const page = pageOf(request.query);
      const { rows, total } = await installs.list(page);
      return { data: rows.map(presentModelInstall), meta: paginationMeta(`${API_PREFIX}/model-installs`, page, total) };
    },
  );

  app.get(
    "/model-installs/:id",
    {
      schema: {
        tags,
        operationId: "getModelInstall",
        summary: "Get a model install, with its status and progress",
        description: `Poll it until \`status\` is \`success\` (the model is then listed by GET /model-catalogue as installed, and a separation model by GET /separation-models) or \`error\` (\`errorMessage\` says why). ${operatorOnly}`,
        security: bearerSecurity,
        params: IdParams,
        response: { 200: Type.Ref("ModelInstall"), ...errorResponses(401, 403, 404, 429) },
      },
    },
    async (request) => {
      requireOperator(request, "Reading a model install");
      const row = await installs.find(request.params.id);
      if (!row) throw notFound(`model install ${request.params.id} not found`);
      return presentModelInstall(row);
    },
  );
};
