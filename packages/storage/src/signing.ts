import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * HMAC-SHA256 signatures for local-disk download URLs:
 * `${baseUrl}/files/<key>?expires=<unix seconds>&signature=<hex>`, signed over `<key>\n<expires>`.
 */
export function signFileKey(secret: string, key: string, expires: number): string {
  return createHmac("sha256", secret).update(`${key}\n${expires}`).digest("hex");
}

export function fileUrlPath(key: string): string {
  return "/files/" + key.split("/").map(encodeURIComponent).join("/");
}

export function buildSignedFileUrl(baseUrl: string, secret: string, key: string, expires: number): string {
  const signature = signFileKey(secret, key, expires);
  return `${baseUrl.replace(/\/+$/, "")}${fileUrlPath(key)}?expires=${expires}&signature=${signature}`;
}

export type SignatureCheck = "ok" | "expired" | "invalid";

/** Checks a presented signature in constant time; `now` is unix seconds. */
export function verifyFileSignature(
  secret: string,
  key: string,
  expires: unknown,
  signature: unknown,
  now: number = Math.floor(Date.now() / 1000),
): SignatureCheck {
  if (typeof expires !== "string" || !/^\d{1,12}$/.test(expires)) return "invalid";
  if (typeof signature !== "string" || !/^[0-9a-f]{64}$/i.test(signature)) return "invalid";
  const expected = Buffer.from(signFileKey(secret, key, Number(expires)), "hex");
  const given = Buffer.from(signature, "hex");
  if (!timingSafeEqual(expected, given)) return "invalid";
  if (Number(expires) < now) return "expired";
  return "ok";
}
