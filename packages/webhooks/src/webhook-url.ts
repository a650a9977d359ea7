import { isIP } from "node:net";
import type { WebhookAddressPolicy } from "./address-policy.ts";

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * Why `value` cannot be a webhook URL, or null when it can: an absolute http(s) URL of at most
 * 2048 characters, without credentials (they would be sent to every proxy and log on the way;
 * receivers authenticate deliveries by their signature), whose host, when it is an IP literal,
 * the policy allows. Host names are checked on the address each delivery connects to.
 */
export function webhookUrlProblem(value: string, policy: WebhookAddressPolicy): string | null {
  return outboundUrlProblem("webhookUrl", value, policy, {
    credentials: "receivers verify the Mixdown-Signature header instead",
    denied: "this service does not deliver to",
  });
}

/**
 * The same rules for any address the service itself will request (a voice model's `modelUrl`):
 * `field` names it in the message; `why` says what the credentials rule and the policy mean for
 * that use. Null when the URL passes.
 */
/** The words for a link longer than MAX_WEBHOOK_URL_LENGTH, wherever a link is refused for its length. */
export function urlLengthProblem(field: string): string {
  return `${field} must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`;
}

/** What the rules for a link the service downloads (a voice model's `modelUrl`, a batch's `urls`) say when they refuse one. */
export const DOWNLOAD_LINK_RULES = {
  credentials: "a link that needs a password cannot be imported",
  denied: "this service does not download from",
};

/**
 * Why `value` cannot be a link the service downloads, or null when it can: outboundUrlProblem's
 * rules in DOWNLOAD_LINK_RULES' words. The API checks each link with it at create, and the worker
 * each address its download requests (redirects too).
 */
export function downloadLinkProblem(field: string, value: string, policy: WebhookAddressPolicy): string | null {
  return outboundUrlProblem(field, value, policy, DOWNLOAD_LINK_RULES);
}

export function outboundUrlProblem(
  field: string,
  value: string,
  policy: WebhookAddressPolicy,
  why: { credentials: string; denied: string },
): string | null {
  if (value.length > MAX_WEBHOOK_URL_LENGTH) return urlLengthProblem(field);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `${field} must be an absolute URL (https://host/path)`;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    return `${field} must use http or https, not ${url.protocol.replace(/:$/, "")}`;
  if (url.username || url.password) return `${field} must not contain credentials (user:password@); ${why.credentials}`;
  if (!url.hostname) return `${field} must name a host`;
  const literal = hostAddress(url);
  if (literal && !policy.allows(literal))
    return `${field} points to ${literal}, in a network ${why.denied} (WEBHOOK_DENIED_NETWORKS)`;
  return null;
}

/** The URL's host as an IP address when it is one (brackets of IPv6 literals removed), else null. */
export function hostAddress(url: URL): string | null {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  return isIP(host) ? host : null;
}
