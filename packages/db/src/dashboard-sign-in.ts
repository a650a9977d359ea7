import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto";
import type { PrismaClient } from "./generated/prisma/client.ts";

/** How long a dashboard sign-in link works when the issuer names no other time. */
export const DASHBOARD_SIGN_IN_TTL_MS = 15 * 60_000;

const IV_BYTES = 12;
const TAG_BYTES = 16;

function hashCode(code: string): string {
  return createHash("sha256").update(`mixdown dashboard sign-in code:${code}`, "utf8").digest("hex");
}

/** The sealing key comes from the code itself: the stored row cannot open its key without the code. */
function sealingKey(code: string): Buffer {
  return Buffer.from(hkdfSync("sha256", code, "mixdown", "dashboard sign-in key", 32));
}

function seal(code: string, apiKey: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", sealingKey(code), iv);
  const sealed = Buffer.concat([cipher.update(apiKey, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64url");
}

function unseal(code: string, stored: string): string {
  const bytes = Buffer.from(stored, "base64url");
  const decipher = createDecipheriv("aes-256-gcm", sealingKey(code), bytes.subarray(0, IV_BYTES));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
}

/**
 * One-time codes that sign a browser in to the web dashboard as an API key, so that a link can
 * carry the code instead of the key. A code works once, until it expires, and only while its key
 * is not revoked.
 */
export class DashboardSignInRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** A new code for `apiKey` (the plain key, whose row is `apiKeyId`); expired codes are deleted on the way. */
  async issue(input: { apiKeyId: number; apiKey: string; ttlMs?: number }): Promise<{ code: string; expiresAt: Date }> {
    const code = randomBytes(24).toString("base64url");
    const expiresAt = new Date(Date.now() + (input.ttlMs ?? DASHBOARD_SIGN_IN_TTL_MS));
    await this.prisma.dashboardSignInCode.deleteMany({ where: { expiresAt: { lt: new Date() } } });
    await this.prisma.dashboardSignInCode.create({
      data: { codeHash: hashCode(code), apiKeyId: input.apiKeyId, sealedKey: seal(code, input.apiKey), expiresAt },
    });
    return { code, expiresAt };
  }

  /**
   * The API key a code stands for, or null when the code is unknown, already used, expired or its
   * key revoked. The row is deleted first: of two concurrent redeems only one gets the key.
   */
  async redeem(code: string): Promise<string | null> {
    const rows = await this.prisma.dashboardSignInCode.findMany({
      where: { codeHash: hashCode(code) },
      include: { apiKey: { select: { revokedAt: true } } },
    });
    const row = rows[0];
    if (!row) return null;
    const { count } = await this.prisma.dashboardSignInCode.deleteMany({ where: { id: row.id } });
    if (count !== 1 || row.expiresAt.getTime() <= Date.now() || row.apiKey.revokedAt) return null;
    return unseal(code, row.sealedKey);
  }
}
