import { downloadUrlOf } from "@mixdown/voice/model-source";
import { downloadLinkProblem, type WebhookAddressPolicy } from "@mixdown/webhooks";
import { unprocessable } from "../http/errors.ts";

/**
 * A link the worker will download (a voice model's `modelUrl` / `indexUrl`, a batch's `urls`),
 * checked at create by the rules of every address the service requests itself (absolute
 * http(s), no credentials, at most 2048 characters, not a literal address in
 * WEBHOOK_DENIED_NETWORKS; host names are checked by the worker's download on the address it
 * connects to): a 422 naming `field` when it fails. A Hugging Face page link (`/blob/`) becomes
 * its download link. Undefined for an absent or blank value.
 */
export function checkDownloadLink(field: string, value: string | undefined, policy: WebhookAddressPolicy): string | undefined {
  const raw = value?.trim();
  if (!raw) return undefined;
  const url = downloadUrlOf(raw);
  const problem = downloadLinkProblem(field, url, policy);
  if (problem) throw unprocessable(problem);
  return url;
}
