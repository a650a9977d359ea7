import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * `Mixdown-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, Stripe's
 * scheme: the timestamp is signed with the body so a receiver can refuse replays of old
 * deliveries. The key is the whole secret string (`whsec_...`) as UTF-8.
 */
export function signatureHeader(secret: string, body: string, at: Date = new Date()): string {
  const t = Math.floor(at.getTime() / 1000);
  return `t=${t},v1=${hmac(secret, t, body)}`;
}

/**
 * What a receiver does: true when `header` carries a v1 signature of `body` under `secret` whose
 * timestamp is within `toleranceSeconds` of `now`.
 */
export function verifySignature(
  secret: string,
  body: string,
  header: string,
  toleranceSeconds = 300,
  now: Date = new Date(),
): boolean {
  const parts = new Map<string, string[]>();
  for (const item of header.split(",")) {
    const [k, v] = item.split("=", 2);
    if (k && v) parts.set(k.trim(), [...(parts.get(k.trim()) ?? []), v.trim()]);
  }
  const t = Number(parts.get("t")?.[0]);
  if (!Number.isInteger(t) || Math.abs(now.getTime() / 1000 - t) > toleranceSeconds) return false;
  const expected = Buffer.from(hmac(secret, t, body), "hex");
  return (parts.get("v1") ?? []).some((v) => {
    const given = Buffer.from(v, "hex");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

function hmac(secret: string, t: number, body: string): string {
  return createHmac("sha256", secret).update(`${t}.${body}`, "utf8").digest("hex");
}
