import { MAX_WEBHOOK_URL_LENGTH, webhookUrlProblem, type WebhookAddressPolicy } from "@mixdown/webhooks";
import type { FastifyRequest } from "fastify";
import { Type } from "typebox";
import { unprocessable } from "../http/errors.ts";

/** Who asked for a job and where its end is to be told: stored on the row at create. */
export interface JobOrigin {
  callerId: number;
  /** The key whose webhook secret signs the job's webhook. */
  apiKeyId: number;
  webhookUrl: string | null;
}

/** The `webhookUrl` of every job create: a multipart text field, or a JSON property of the blender. */
/**
 * A voice model's id in a create's form: a row id (1 to 2^31 - 1), which the form's validation
 * refuses otherwise ("voiceModelId must be a positive integer").
 */
export const VoiceModelIdField = (description: string) => Type.Integer({ minimum: 1, maximum: 2147483647, description });

export const WebhookUrlField = Type.Optional(
  Type.String({
    format: "uri",
    maxLength: MAX_WEBHOOK_URL_LENGTH,
    description:
      'Optional absolute http(s) URL (no credentials, at most 2048 characters). When the job ends (success, error or cancelled) the service POSTs its record, as GET answers it, as JSON to this URL with `Mixdown-Event: job.<status>`, `Mixdown-Delivery: <id>` (the same on retries) and `Mixdown-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, the secret being the API key\'s webhook secret (`mixdown keys webhook-secret`). A 2xx answer delivers it; no answer, a 5xx or a 429 is retried (8 tries over about 10 minutes); other answers are final.',
  }),
);

/** The origin of a create: the authenticated key, and `webhookUrl` checked (422 when it cannot be one). */
export function jobOrigin(request: FastifyRequest, webhookUrl: unknown, policy: WebhookAddressPolicy): JobOrigin {
  const origin = { callerId: request.auth.caller.id, apiKeyId: request.auth.apiKeyId };
  if (webhookUrl === undefined || webhookUrl === null) return { ...origin, webhookUrl: null };
  if (typeof webhookUrl !== "string") throw unprocessable("webhookUrl must be a string (an absolute http or https URL)");
  const problem = webhookUrlProblem(webhookUrl, policy);
  if (problem) throw unprocessable(problem);
  return { ...origin, webhookUrl };
}
