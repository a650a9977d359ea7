import { createHash, randomBytes } from "node:crypto";
import type { Caller, PrismaClient } from "./generated/prisma/client.ts";

/** Every key starts with this, so a leaked one is recognisable (e.g. by secret scanners). */
export const API_KEY_PREFIX = "mxd_";
/** Characters of the key kept in clear (`mxd_` + 8) to name a key in listings and revocations. */
const DISPLAY_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;

/**
 * A key's own requests-per-minute limits. null follows the deployment's RATE_LIMIT_*_PER_MINUTE;
 * 0 is unlimited.
 */
export interface KeyRateLimits {
  readsPerMinute: number | null;
  writesPerMinute: number | null;
}

export interface CreatedApiKey {
  /** The plain key: shown once, never stored. */
  key: string;
  id: number;
  callerId: number;
  prefix: string;
  /** Signs the webhooks of jobs this key creates (`Mixdown-Signature`). */
  webhookSecret: string;
}

export interface ApiKeySummary {
  id: number;
  name: string;
  prefix: string;
  callerId: number;
  callerName: string;
  createdAt: Date;
  revokedAt: Date | null;
  rateLimits: KeyRateLimits;
  /** Monthly quota of audio in minutes; null: none. */
  monthlyQuotaMinutes: number | null;
  /** May install catalogue models and read every key's usage. */
  operator: boolean;
}

export interface AuthenticatedCaller {
  caller: Caller;
  apiKeyId: number;
  keyPrefix: string;
  rateLimits: KeyRateLimits;
  /** An operator key: may install catalogue models and read every key's usage. */
  operator: boolean;
}

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** Issues, resolves and revokes API keys; only their sha256 hashes are stored. */
export class ApiKeyRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Creates a key for `callerId`, or for a new caller named `name` when none is given, with its
   * own rate limits and monthly quota (minutes of audio) when given; `operator` makes an operator key.
   */
  async createApiKey(
    input: { name: string; callerId?: number; monthlyQuotaMinutes?: number | null; operator?: boolean } & Partial<KeyRateLimits>,
  ): Promise<CreatedApiKey> {
    checkRateLimits(input);
    checkQuota(input.monthlyQuotaMinutes);
    const key = API_KEY_PREFIX + randomBytes(32).toString("base64url");
    const prefix = key.slice(0, DISPLAY_PREFIX_LENGTH);
    const row = await this.prisma.apiKey.create({
      data: {
        name: input.name,
        keyHash: hashApiKey(key),
        keyPrefix: prefix,
        readsPerMinute: input.readsPerMinute ?? null,
        writesPerMinute: input.writesPerMinute ?? null,
        monthlyQuotaMinutes: input.monthlyQuotaMinutes ?? null,
        operator: input.operator ?? false,
        caller: input.callerId === undefined ? { create: { name: input.name } } : { connect: { id: input.callerId } },
      },
    });
    return { key, id: row.id, callerId: row.callerId, prefix, webhookSecret: row.webhookSecret };
  }

  /** The webhook signing secret of a key named by id or displayed prefix (revoked keys too: their jobs' webhooks are still signed with it). */
  async webhookSecret(idOrPrefix: string | number): Promise<{ summary: ApiKeySummary; webhookSecret: string } | null> {
    const match = await this.findOne(idOrPrefix);
    if (!match) return null;
    const row = await this.prisma.apiKey.findUniqueOrThrow({ where: { id: match.id }, include: { caller: true } });
    return { summary: summarise(row), webhookSecret: row.webhookSecret };
  }

  /** The caller a presented key belongs to, or null for unknown and revoked keys. */
  async findCallerByKey(key: string): Promise<AuthenticatedCaller | null> {
    if (!key.startsWith(API_KEY_PREFIX)) return null;
    const row = await this.prisma.apiKey.findUnique({ where: { keyHash: hashApiKey(key) }, include: { caller: true } });
    if (!row || row.revokedAt) return null;
    return {
      caller: row.caller,
      apiKeyId: row.id,
      keyPrefix: row.keyPrefix,
      rateLimits: rateLimitsOf(row),
      operator: row.operator,
    };
  }

  /**
   * Revokes a key named by its numeric id or its displayed prefix. Returns the revoked key, or null
   * when nothing matches; an ambiguous prefix is refused rather than revoking several keys.
   */
  async revokeApiKey(idOrPrefix: string | number): Promise<ApiKeySummary | null> {
    const match = await this.findOne(idOrPrefix);
    if (!match) return null;
    const row = await this.prisma.apiKey.update({
      where: { id: match.id },
      data: { revokedAt: match.revokedAt ?? new Date() },
      include: { caller: true },
    });
    return summarise(row);
  }

  /**
   * Sets a key's own rate limits (named as for revocation); a limit left out is kept, null
   * returns it to the deployment's default. Running API processes see it once their cached
   * copy of the key expires.
   */
  async setRateLimits(idOrPrefix: string | number, limits: Partial<KeyRateLimits>): Promise<ApiKeySummary | null> {
    checkRateLimits(limits);
    const match = await this.findOne(idOrPrefix);
    if (!match) return null;
    const row = await this.prisma.apiKey.update({
      where: { id: match.id },
      data: { readsPerMinute: limits.readsPerMinute, writesPerMinute: limits.writesPerMinute },
      include: { caller: true },
    });
    return summarise(row);
  }

  /**
   * Sets a key's monthly quota in minutes of audio (named as for revocation); null removes it.
   * The next create checks it (quotas are read per create, not cached).
   */
  async setMonthlyQuota(idOrPrefix: string | number, minutes: number | null): Promise<ApiKeySummary | null> {
    checkQuota(minutes);
    const match = await this.findOne(idOrPrefix);
    if (!match) return null;
    const row = await this.prisma.apiKey.update({
      where: { id: match.id },
      data: { monthlyQuotaMinutes: minutes },
      include: { caller: true },
    });
    return summarise(row);
  }

  /** The key with this numeric id or displayed prefix; an ambiguous prefix is an error. */
  private async findOne(idOrPrefix: string | number) {
    const where = /^\d+$/.test(String(idOrPrefix))
      ? { id: Number(idOrPrefix) }
      : { keyPrefix: { startsWith: String(idOrPrefix) } };
    const matches = await this.prisma.apiKey.findMany({ where });
    if (matches.length > 1) {
      throw new Error(`"${idOrPrefix}" matches ${matches.length} keys; use the numeric id.`);
    }
    return matches[0] ?? null;
  }

  /** Every key, revoked ones included, oldest first. */
  async listApiKeys(): Promise<ApiKeySummary[]> {
    const rows = await this.prisma.apiKey.findMany({ orderBy: { id: "asc" }, include: { caller: true } });
    return rows.map(summarise);
  }
}

export class InvalidRateLimitError extends Error {
  override name = "InvalidRateLimitError";
}

function checkRateLimits(limits: Partial<KeyRateLimits>): void {
  for (const name of ["readsPerMinute", "writesPerMinute"] as const) {
    const value = limits[name];
    // The column is a Postgres INTEGER.
    if (value !== null && value !== undefined && !(Number.isInteger(value) && value >= 0 && value <= 2147483647)) {
      throw new InvalidRateLimitError(
        `${name} must be a whole number of requests per minute, 0 or more (0 = unlimited); got ${value}`,
      );
    }
  }
}

function checkQuota(minutes: number | null | undefined): void {
  // The column is a Postgres INTEGER; a quota of 0 minutes refuses every job with audio.
  if (minutes !== null && minutes !== undefined && !(Number.isInteger(minutes) && minutes >= 0 && minutes <= 2147483647)) {
    throw new InvalidRateLimitError(`monthlyQuotaMinutes must be a whole number of minutes, 0 or more; got ${minutes}`);
  }
}

function rateLimitsOf(row: KeyRateLimits): KeyRateLimits {
  return { readsPerMinute: row.readsPerMinute, writesPerMinute: row.writesPerMinute };
}

function summarise(row: {
  id: number;
  name: string;
  keyPrefix: string;
  callerId: number;
  caller: Caller;
  createdAt: Date;
  revokedAt: Date | null;
  readsPerMinute: number | null;
  writesPerMinute: number | null;
  monthlyQuotaMinutes: number | null;
  operator: boolean;
}): ApiKeySummary {
  return {
    id: row.id,
    name: row.name,
    prefix: row.keyPrefix,
    callerId: row.callerId,
    callerName: row.caller.name,
    createdAt: row.createdAt,
    revokedAt: row.revokedAt,
    rateLimits: rateLimitsOf(row),
    monthlyQuotaMinutes: row.monthlyQuotaMinutes,
    operator: row.operator,
  };
}
