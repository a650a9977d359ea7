import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import type { WebhookAddressPolicy } from "./address-policy.ts";
import { signatureHeader } from "./signature.ts";
import { hostAddress } from "./webhook-url.ts";

export interface WebhookRequest {
  url: string;
  /** The JSON body, exactly as signed. */
  body: string;
  secret: string;
  /** `job.success`, `job.error`, `job.cancelled`. */
  event: string;
  /** The WebhookDelivery id: the same on every retry, so receivers can drop repeats. */
  deliveryId: number;
  timeoutMs: number;
  policy: WebhookAddressPolicy;
  signal?: AbortSignal;
}

/** The receiver's answer (any status: the caller decides what a retry is). */
export interface WebhookAnswer {
  statusCode: number;
}

/** The policy forbids the address the URL leads to: no retry can help. */
export class WebhookRefused extends Error {
  override readonly name = "WebhookRefused";
}

/**
 * POSTs one signed delivery and resolves with the answer's status (redirects are not followed:
 * a 3xx is an answer). Network errors and the timeout reject. With a restricted policy, every
 * address the host resolves to is checked in the socket's own lookup, so the address checked is
 * the address connected to.
 */
export function deliverWebhook(req: WebhookRequest): Promise<WebhookAnswer> {
  const url = new URL(req.url);
  const literal = hostAddress(url);
  if (literal && !req.policy.allows(literal))
    return Promise.reject(new WebhookRefused(`${literal} is in a denied network (WEBHOOK_DENIED_NETWORKS)`));
  const lookup: LookupFunction | undefined = req.policy.restricted ? guardedLookup(req.policy) : undefined;
  const signal = req.signal
    ? AbortSignal.any([req.signal, AbortSignal.timeout(req.timeoutMs)])
    : AbortSignal.timeout(req.timeoutMs);
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const request = send(
      url,
      {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "Content-Length": Buffer.byteLength(req.body),
          "User-Agent": "Mixdown-Webhooks/1",
          "Mixdown-Signature": signatureHeader(req.secret, req.body),
          "Mixdown-Event": req.event,
          "Mixdown-Delivery": String(req.deliveryId),
        },
        signal,
        ...(lookup ? { lookup } : {}),
      },
      (res: IncomingMessage) => {
        // The body is not needed, but it must be read for the socket to be released.
        res.resume();
        res.on("end", () => resolve({ statusCode: res.statusCode ?? 0 }));
        res.on("error", reject);
      },
    );
    request.on("error", (err) =>
      reject(signal.aborted && !req.signal?.aborted ? new Error(`no answer within ${req.timeoutMs} ms`) : err),
    );
    request.end(req.body);
  });
}

/**
 * A `lookup` for node:http(s) that resolves every address of the host and fails (with `refuse`'s
 * error, by default a WebhookRefused) when any of them is in a denied network, so the address
 * checked is the address the socket connects to.
 */
export function guardedLookup(
  policy: WebhookAddressPolicy,
  refuse: (message: string) => Error = (message) => new WebhookRefused(message),
): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, "", 0);
      const denied = addresses.find((a) => !policy.allows(a.address));
      if (denied)
        return callback(
          refuse(`${hostname} resolves to ${denied.address}, in a denied network (WEBHOOK_DENIED_NETWORKS)`),
          "",
          0,
        );
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}
