import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { parseUsageMonth, totalOf, usageMonthOf, type UsageRepository } from "@mixdown/db";
import { RECORD_KINDS } from "@mixdown/jobs";
import { Type, type Static } from "typebox";
import { requireOperator } from "../auth/operator.ts";
import { bearerSecurity, errorResponses } from "../http/schemas.ts";

const Seconds = (description: string) => Type.Number({ minimum: 0, description });

const Jobs = (description: string) => Type.Integer({ minimum: 0, description });

const KindUsage = Type.Object({
  kind: Type.Enum([...RECORD_KINDS], {
    type: "string",
    description:
      "The job kind (`vocal_separation`, `stem_split`, `voice_conversion`, `tts`, `voice_blend`, `audio_analysis`, `vocal_repair`, `mastering`, `harmony`, `pipeline`: always 0, its steps' jobs count under their kinds)",
  }),
  seconds: Seconds("Seconds of audio its successful jobs processed"),
  jobs: Jobs("Its successful jobs"),
});

export const UsageReport = Type.Object(
  {
    month: Type.String({ description: "The calendar month (UTC), `YYYY-MM`" }),
    from: Type.String({ format: "date-time", description: "The month's first instant (UTC)" }),
    to: Type.String({ format: "date-time", description: "The next month's first instant: when the month's quota resets" }),
    apiKey: Type.Object(
      {
        id: Type.Integer(),
        prefix: Type.String({ description: "The key's first characters, as `keys list` shows them" }),
        operator: Type.Boolean({
          description: "Whether it is an operator key (`keys create --operator`): it may ask for `all=true` and install models",
        }),
      },
      { description: "The key the request was made with: usage and quota are per key" },
    ),
    kinds: Type.Array(KindUsage, { description: "Every job kind, those without a job at 0" }),
    total: Type.Object({
      seconds: Seconds("Seconds of audio of every kind"),
      jobs: Jobs("Successful jobs of every kind"),
    }),
    quota: Type.Union(
      [
        Type.Object({
          minutes: Type.Integer({ description: "The key's monthly quota, minutes of audio" }),
          usedSeconds: Seconds("The month's total seconds"),
          runningSeconds: Seconds(
            "Seconds held by the key's jobs still running (the current month only): they count against the quota from their create",
          ),
          remainingSeconds: Seconds("What new jobs may still take in the month"),
          resetsAt: Type.String({ format: "date-time", description: "When the month ends (UTC) and the quota starts again" }),
        }),
        Type.Null(),
      ],
      { description: "Null when the key has no quota" },
    ),
    keys: Type.Optional(
      Type.Array(
        Type.Object({
          apiKeyId: Type.Integer(),
          name: Type.String({ description: "The key's name (`keys create --name`)" }),
          prefix: Type.String({ description: "The key's first characters" }),
          callerId: Type.Integer(),
          callerName: Type.String(),
          revoked: Type.Boolean({ description: "Whether the key is revoked (its past usage still counts)" }),
          monthlyQuotaMinutes: Type.Union([Type.Integer(), Type.Null()], { description: "Its monthly quota; null: none" }),
          kinds: Type.Array(KindUsage),
          seconds: Seconds("Seconds of audio of every kind"),
          jobs: Jobs("Successful jobs of every kind"),
        }),
        {
          description:
            "With `all=true` (operator keys only): every API key's usage in the month, every caller's keys, revoked ones too, oldest key first",
        },
      ),
    ),
  },
  { $id: "UsageReport", description: "One API key's usage in one calendar month (UTC)" },
);
export type UsageReport = Static<typeof UsageReport>;

const UsageQuery = Type.Object({
  month: Type.Optional(
    Type.String({
      pattern: "^[0-9]{4}-(0[1-9]|1[0-2])$",
      description: "The calendar month (UTC) as `YYYY-MM`; default: the current month",
    }),
  ),
  all: Type.Optional(
    Type.Boolean({
      description:
        "true: also every API key's usage in the month (`keys`), every caller's; operator keys only (`keys create --operator`), any other key is answered 403",
    }),
  ),
});

/** `GET /usage`: the calling key's usage in a month, by kind, and where it stands against its quota. */
export const usageRoutes: FastifyPluginAsyncTypebox<{ usage: UsageRepository }> = async (app, { usage }) => {
  app.get(
    "/usage",
    {
      schema: {
        tags: ["Usage"],
        operationId: "getUsage",
        summary: "The calling API key's usage and quota in a month (an operator: every key's)",
        description:
          "Seconds of audio and successful jobs per job kind in one calendar month (UTC), for the API key the request is made with. A job counts once, when it succeeds, in the month it succeeded: a separation or conversion its input's duration, text to speech its spoken output's, a voice blend 0 seconds. Failed and cancelled jobs count nothing. `quota` is the key's monthly quota (minutes of audio) and what is left of it; a create that would go over it is answered 429. An operator key adds `all=true` for every API key's usage in the month (`keys`), every caller's.",
        security: bearerSecurity,
        querystring: UsageQuery,
        response: { 200: Type.Ref("UsageReport"), ...errorResponses(401, 403, 422, 429) },
      },
    },
    async (request): Promise<UsageReport> => {
      if (request.query.all) requireOperator(request, "Every caller's usage (`all=true`)");
      const now = new Date();
      const month = request.query.month ? parseUsageMonth(request.query.month)! : usageMonthOf(now);
      const { apiKeyId, keyPrefix } = request.auth;
      const [kinds, quota, keys] = await Promise.all([
        usage.ofKey(apiKeyId, month),
        usage.quotaOf(apiKeyId, month, now),
        request.query.all ? usage.everyKey(month) : undefined,
      ]);
      return {
        month: month.label,
        from: month.from.toISOString(),
        to: month.to.toISOString(),
        apiKey: { id: apiKeyId, prefix: keyPrefix, operator: request.auth.operator },
        kinds,
        total: totalOf(kinds),
        quota: quota && { ...quota, resetsAt: quota.resetsAt.toISOString() },
        ...(keys && {
          keys: keys.map(({ revokedAt, ...key }) => ({ ...key, revoked: revokedAt !== null })),
        }),
      };
    },
  );
};
