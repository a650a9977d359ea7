import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { ModelInstallRepository } from "@mixdown/db";
import { entrySize, installedEntries, readModelCatalogue, voiceAssetPaths, type ModelCatalogue } from "@mixdown/model-catalogue";
import { resolve } from "node:path";
import { Type, type Static } from "typebox";
import type { AppContext } from "../app-context.ts";
import type { JobSubmitter } from "../jobs/job-submitter.ts";
import { bearerSecurity, errorResponses } from "../http/schemas.ts";
import { modelInstallRoutes, presentModelInstall } from "./installs.ts";

export const CatalogueModelRecord = Type.Object(
  {
    name: Type.String({
      description: "What `./mixdown.sh models pull` takes; once installed, what a separation's `model` names",
    }),
    kind: Type.Union([Type.Literal("separation"), Type.Literal("voice-asset"), Type.Literal("tts-voice")], {
      description:
        "`separation`: a separation model; `voice-asset`: what RVC voice models need (ContentVec, RMVPE); `tts-voice`: a Piper voice text to speech speaks with (installed in TTS_PIPER_DIR)",
    }),
    family: Type.String(),
    stems: Type.Array(Type.String(), { description: "The stems the network outputs (empty for a voice asset)" }),
    description: Type.String(),
    sizeBytes: Type.Union([Type.Integer(), Type.Null()], {
      description: "Its files together; null when a size is not published",
    }),
    verifiedBy: Type.Array(Type.String(), {
      description:
        "What its download is checked against: `sha256`, `sha256-prefix` (demucs), `uvr-hash`, `md5` (Piper voices), `size`",
    }),
    licence: Type.String(),
    source: Type.String(),
    reported: Type.Array(
      Type.Object({ stem: Type.String(), metric: Type.String(), value: Type.Number(), benchmark: Type.String() }),
      { description: "Quality its authors or model lists report, with the benchmark" },
    ),
    installed: Type.Boolean({ description: "Whether this server has it installed now" }),
    install: Type.String({ description: "The command that installs it on the server" }),
    lastInstall: Type.Union([Type.Ref("ModelInstall"), Type.Null()], {
      description:
        "For an operator key: the newest install of it asked for through the API (POST /model-installs), running or ended; null otherwise",
    }),
  },
  { $id: "CatalogueModel", description: "A published model Mixdown can download, verify and install by name" },
);
export type CatalogueModelRecord = Static<typeof CatalogueModelRecord>;

function verifiedBy(files: ModelCatalogue["models"][number]["files"]): string[] {
  const checks = new Set<string>();
  for (const f of files) {
    if (f.sha256) checks.add("sha256");
    if (f.sha256Prefix) checks.add("sha256-prefix");
    if (f.uvrHash) checks.add("uvr-hash");
    if (f.md5) checks.add("md5");
    if (f.sizeBytes) checks.add("size");
  }
  return [...checks];
}

/**
 * `GET /model-catalogue`: the catalogue (models/catalogue.json) with what this server has installed;
 * `/model-installs`: an operator's installs of its entries.
 */
export const modelCatalogueRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; submitter: JobSubmitter }> = async (
  app,
  { ctx, submitter },
) => {
  const { config } = ctx;
  const installs = new ModelInstallRepository(ctx.prisma);
  const modelsDir = resolve(config.MODELS_DIR);
  // The file does not change while the server runs; what is installed does, and is read per request.
  const catalogue = await readModelCatalogue(config.MIXDOWN_MODEL_CATALOGUE || undefined);
  const assets = voiceAssetPaths(modelsDir, config);
  app.get(
    "/model-catalogue",
    {
      schema: {
        tags: ["Separation models"],
        operationId: "listModelCatalogue",
        summary: "List the published models this server can install",
        description:
          "Every entry of the model catalogue, with whether it is installed here and the command that installs it (`./mixdown.sh models pull NAME`); an operator key may install it with POST /model-installs instead, and sees the newest such install of each entry as `lastInstall`.",
        security: bearerSecurity,
        response: {
          200: Type.Object({
            data: Type.Array(Type.Ref("CatalogueModel")),
            canInstall: Type.Boolean({
              description: "Whether the calling key may install these models (POST /model-installs): an operator key",
            }),
          }),
          ...errorResponses(401, 429),
        },
      },
    },
    async (request) => {
      const [installed, latest] = await Promise.all([
        installedEntries(catalogue, modelsDir, assets),
        request.auth.operator ? installs.latestByName() : new Map(),
      ]);
      return {
        data: catalogue.models.map((m) => ({
          name: m.name,
          kind: m.kind,
          family: m.family,
          stems: m.stems ?? [],
          description: m.description,
          sizeBytes: entrySize(m) ?? null,
          verifiedBy: verifiedBy(m.files),
          licence: m.licence,
          source: m.source,
          reported: m.reported.map(({ stem, metric, value, benchmark }) => ({ stem, metric, value, benchmark })),
          installed: installed.has(m.name),
          install: `./mixdown.sh models pull ${m.name}`,
          lastInstall: latest.has(m.name) ? presentModelInstall(latest.get(m.name)!) : null,
        })),
        canInstall: request.auth.operator,
      };
    },
  );
  await app.register(modelInstallRoutes, {
    catalogue,
    modelsDir,
    assets,
    installs,
    submitter,
    maxPerPage: config.MAX_PER_PAGE,
  });
};
