import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { DashboardSignInRepository } from "@mixdown/db";
import { Type } from "typebox";
import { notFound, unauthorized } from "../http/errors.ts";
import { errorResponses } from "../http/schemas.ts";

/** Where `pnpm --filter @mixdown/web build` writes the dashboard. */
export const DEFAULT_WEB_DIR = fileURLToPath(new URL("../../../web/dist", import.meta.url));

/**
 * The web dashboard: its built files at `/` (when they exist: a checkout that never built
 * apps/web still serves the API), and `POST /dashboard/sign-in`, which turns the one-time code of
 * the link `mixdown up` prints into the API key it stands for.
 */
export const dashboardRoutes: FastifyPluginAsyncTypebox<{ signInCodes: DashboardSignInRepository; webDir: string }> = async (
  app,
  { signInCodes, webDir },
) => {
  app.post(
    "/dashboard/sign-in",
    {
      schema: {
        tags: ["Dashboard"],
        operationId: "signInToDashboard",
        summary: "Exchange a dashboard sign-in code for its API key",
        security: [],
        description:
          "The link `mixdown up` prints (`/#/sign-in/<code>`) carries a one-time code instead of the API key; the dashboard posts it here and keeps the key it gets back. A code works once, for 15 minutes, while its key is not revoked; the server stores only its hash. No `Authorization` header: the code is the credential.",
        body: Type.Object({ code: Type.String({ minLength: 1, maxLength: 200, description: "The code from the link" }) }),
        response: {
          200: Type.Object({ apiKey: Type.String({ description: "The API key to send as `Authorization: Bearer <key>`" }) }),
          ...errorResponses(401, 422, 503),
        },
      },
    },
    async (request, reply) => {
      const apiKey = await signInCodes.redeem(request.body.code);
      if (!apiKey) {
        throw unauthorized(
          "This sign-in code is unknown, already used or expired (codes work once, for 15 minutes): restart `./mixdown.sh up` for a new link, or sign in with an API key.",
        );
      }
      reply.header("cache-control", "no-store");
      return { apiKey };
    },
  );

  if (existsSync(path.join(webDir, "index.html"))) {
    await app.register(fastifyStatic, {
      root: webDir,
      prefix: "/",
      // One route per built file: unknown paths keep the API's JSON 404.
      wildcard: false,
      setHeaders(reply, filePath) {
        // File names under assets/ carry a content hash; index.html must be fetched fresh to name the new ones.
        reply.header(
          "cache-control",
          filePath.includes(`${path.sep}assets${path.sep}`) ? "public, max-age=31536000, immutable" : "no-cache",
        );
      },
    });
  } else {
    app.get("/", { schema: { hide: true } }, async () => {
      throw notFound(`The web dashboard is not built (no ${webDir}/index.html): run \`pnpm --filter @mixdown/web build\`.`);
    });
  }
};
