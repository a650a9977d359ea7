import type { FastifyRequest } from "fastify";
import { forbidden } from "../http/errors.ts";

/**
 * Refuses a request whose key is not an operator key, with a 403 naming what needs one and how
 * an operator makes one. Operator keys install catalogue models for the whole server and read
 * every key's usage; any other key sees only its own.
 */
export function requireOperator(request: FastifyRequest, what: string): void {
  if (request.auth.operator) return;
  throw forbidden(
    `${what} needs an operator key, and key ${request.auth.keyPrefix}… is not one (an operator makes one with \`./mixdown.sh keys create --name NAME --operator\`)`,
  );
}
