import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { API_PREFIX, type AppContext } from "../app-context.ts";
import { paginationMeta } from "../http/pagination.ts";
import { bearerSecurity, errorResponses, IdParams, ListQuery } from "../http/schemas.ts";
import { listOf } from "../records/schemas.ts";

/** `/voice-models`: list (public catalogue + own, or own only) and fetch. */
export const voiceModelRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const tags = ["Voice models"];
  app.get(
    "/voice-models",
    {
      schema: {
        tags,
        summary: "List voice models: the public catalogue and the caller's own, or only the caller's own",
        security: bearerSecurity,
        querystring: ListQuery(ctx.config.MAX_PER_PAGE, {
          myModels: Type.Optional(Type.Boolean({ description: "true: only the caller's own models; otherwise the public catalogue and the caller's own" })),
        }),
        response: { 200: listOf("VoiceModel"), ...errorResponses(401, 422, 429) },
      },
    },
    async (request) => {
      const mine = request.query.myModels === true;
      const { rows, total } = await ctx.models.list(request.auth.caller.id, mine, request.query);
      return {
        data: rows,
        meta: paginationMeta(`${API_PREFIX}/voice-models`, request.query, total, mine ? { myModels: "true" } : {}),
      };
    },
  );

  app.get(
    "/voice-models/:id",
    {
      schema: {
        tags,
        summary: "Fetch one voice model",
        security: bearerSecurity,
        params: IdParams,
        response: { 200: Type.Ref("VoiceModel"), ...errorResponses(401, 404, 429) },
      },
    },
    (request) => ctx.models.get(request.auth.caller.id, request.params.id),
  );
};
