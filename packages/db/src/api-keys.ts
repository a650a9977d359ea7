import { createHash, randomBytes } from "node:crypto";
import type { Caller, PrismaClient } from "./generated/prisma/client.ts";

/** Every key starts with this, so a leaked one is recognisable (e.g. by secret scanners). */
export const API_KEY_PREFIX = "mxd_";
/** Characters of the key kept in clear (`mxd_` + 8) to name a key in listings and revocations. */
const DISPLAY_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;

export interface CreatedApiKey {
  /** The plain key: shown once, never stored. */
  key: string;
  id: number;
  callerId: number;
  prefix: string;
}

export interface ApiKeySummary {
  id: number;
  name: string;
  prefix: string;
  callerId: number;
  callerName: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export interface AuthenticatedCaller {
  caller: Caller;
  apiKeyId: number;
  keyPrefix: string;
}

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** Issues, resolves and revokes API keys; only their sha256 hashes are stored. */
export class ApiKeyRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Creates a key for `callerId`, or for a new caller named `name` when none is given. */
  async createApiKey(input: { name: string; callerId?: number }): Promise<CreatedApiKey> {
    const key = API_KEY_PREFIX + randomBytes(32).toString("base64url");
    const prefix = key.slice(0, DISPLAY_PREFIX_LENGTH);
    const row = await this.prisma.apiKey.create({
      data: {
        name: input.name,
        keyHash: hashApiKey(key),
        keyPrefix: prefix,
        caller: input.callerId === undefined ? { create: { name: input.name } } : { connect: { id: input.callerId } },
      },
    });
    return { key, id: row.id, callerId: row.callerId, prefix };
  }

  /** The caller a presented key belongs to, or null for unknown and revoked keys. */
  async findCallerByKey(key: string): Promise<AuthenticatedCaller | null> {
    if (!key.startsWith(API_KEY_PREFIX)) return null;
    const row = await this.prisma.apiKey.findUnique({ where: { keyHash: hashApiKey(key) }, include: { caller: true } });
    if (!row || row.revokedAt) return null;
    return { caller: row.caller, apiKeyId: row.id, keyPrefix: row.keyPrefix };
  }

  /**
   * Revokes a key named by its numeric id or its displayed prefix. Returns the revoked key, or null
   * when nothing matches; an ambiguous prefix is refused rather than revoking several keys.
   */
  async revokeApiKey(idOrPrefix: string | number): Promise<ApiKeySummary | null> {
    const where = /^\d+$/.test(String(idOrPrefix))
      ? { id: Number(idOrPrefix) }
      : { keyPrefix: { startsWith: String(idOrPrefix) } };
    const matches = await this.prisma.apiKey.findMany({ where, include: { caller: true } });
    if (matches.length === 0) return null;
    if (matches.length > 1) {
      throw new Error(`"${idOrPrefix}" matches ${matches.length} keys; use the numeric id.`);
    }
    const match = matches[0]!;
    const row = await this.prisma.apiKey.update({
      where: { id: match.id },
      data: { revokedAt: match.revokedAt ?? new Date() },
      include: { caller: true },
    });
    return summarise(row);
  }

  /** Every key, revoked ones included, oldest first. */
  async listApiKeys(): Promise<ApiKeySummary[]> {
    const rows = await this.prisma.apiKey.findMany({ orderBy: { id: "asc" }, include: { caller: true } });
    return rows.map(summarise);
  }
}

function summarise(row: {
  id: number;
  name: string;
  keyPrefix: string;
  callerId: number;
  caller: Caller;
  createdAt: Date;
  revokedAt: Date | null;
}): ApiKeySummary {
  return {
    id: row.id,
    name: row.name,
    prefix: row.keyPrefix,
    callerId: row.callerId,
    callerName: row.caller.name,
    createdAt: row.createdAt,
    revokedAt: row.revokedAt,
  };
}
