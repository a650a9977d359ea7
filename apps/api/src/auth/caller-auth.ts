import { createHash } from "node:crypto";
import bearerAuth from "@fastify/bearer-auth";
import type { ApiKeyRepository, AuthenticatedCaller } from "@mixdown/db";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { unauthorized } from "../http/errors.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The caller of an authenticated `/api/kits/v1` request. */
    auth: AuthenticatedCaller;
  }
}

export interface CallerAuthOptions {
  apiKeys: Pick<ApiKeyRepository, "findCallerByKey">;
  /**
   * How long a resolved key is remembered. A revoked key stops working within this time;
   * 0 looks every request up.
   */
  cacheTtlMs: number;
}

/** Resolves presented keys to callers, remembering hits briefly. */
class CallerLookup {
  private readonly cache = new Map<string, { caller: AuthenticatedCaller; expiresAt: number }>();

  constructor(private readonly options: CallerAuthOptions) {}

  async find(key: string): Promise<AuthenticatedCaller | null> {
    if (this.options.cacheTtlMs <= 0) return this.options.apiKeys.findCallerByKey(key);
    const hash = createHash("sha256").update(key).digest("hex");
    const hit = this.cache.get(hash);
    if (hit && hit.expiresAt > Date.now()) return hit.caller;
    const caller = await this.options.apiKeys.findCallerByKey(key);
    if (caller) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(hash, { caller, expiresAt: Date.now() + this.options.cacheTtlMs });
    } else {
      this.cache.delete(hash);
    }
    return caller;
  }
}

/**
 * `Authorization: Bearer <API key>` on every route of the scope it is registered in. Failures
 * are 401 JSON errors (with `WWW-Authenticate: Bearer`), not the plugin's default body.
 */
export async function registerCallerAuth(scope: FastifyInstance, options: CallerAuthOptions): Promise<void> {
  const lookup = new CallerLookup(options);
  await scope.register(bearerAuth, {
    keys: new Set<string>(),
    addHook: false,
    specCompliance: "rfc6749", // the scheme name is case-insensitive (RFC 9110)
    verifyErrorLogLevel: "debug",
    auth: async (key: string, request: FastifyRequest) => {
      if (!key) return false;
      const caller = await lookup.find(key);
      if (!caller) return false;
      request.auth = caller;
      return true;
    },
  });
  scope.addHook("onRequest", (request, reply, done) => {
    scope.verifyBearerAuth!(request, reply, (error?: Error) => {
      if (!error) return done();
      const code = (error as { code?: string }).code;
      if (code === "FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER") {
        return done(unauthorized("missing Authorization header: send `Authorization: Bearer <API key>`"));
      }
      if (code === "FST_BEARER_AUTH_INVALID_AUTHORIZATION_HEADER") {
        const header = request.headers.authorization ?? "";
        return done(
          /^bearer\s/i.test(header)
            ? unauthorized("invalid or revoked API key")
            : unauthorized("Authorization header must use the Bearer scheme: `Authorization: Bearer <API key>`"),
        );
      }
      done(error);
    });
  });
}
