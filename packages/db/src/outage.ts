/**
 * Whether `error` says PostgreSQL could not be reached or went away (refused or dropped
 * connections, a server shutting down or starting up, a pool or connect timeout), as opposed to
 * a query that is wrong. Such a failure is worth retrying once the server is back; callers answer
 * 503 or retry with backoff instead of treating it as a bug.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  for (let e = error as ErrorLike | undefined, depth = 0; e && depth < 5; e = e.cause as ErrorLike | undefined, depth++) {
    if (e.name === "PrismaClientInitializationError") return true;
    if (typeof e.code === "string" && (PRISMA_UNREACHABLE.has(e.code) || isServerGoneSqlState(e.code))) return true;
    const adapterCause = e.meta?.driverAdapterError?.cause;
    if (adapterCause) {
      if (ADAPTER_UNREACHABLE.has(adapterCause.kind ?? "")) return true;
      if (adapterCause.kind === "postgres" && isServerGoneSqlState(adapterCause.code ?? "")) return true;
    }
    if (typeof e.message === "string" && GONE_MESSAGES.test(e.message)) return true;
  }
  return false;
}

interface ErrorLike {
  name?: string;
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  meta?: { driverAdapterError?: { cause?: { kind?: string; code?: string } } };
}

/** Prisma's "can't reach", "timed out", "server closed the connection", "pool timeout". */
const PRISMA_UNREACHABLE = new Set(["P1001", "P1002", "P1008", "P1017", "P2024"]);
/** @prisma/adapter-pg's kinds for socket errors and a full server. */
const ADAPTER_UNREACHABLE = new Set(["DatabaseNotReachable", "ConnectionClosed", "SocketTimeout", "TooManyConnections"]);
/** node-postgres' own messages, and the socket errors below it. */
const GONE_MESSAGES =
  /Connection terminated|Connection ended unexpectedly|Client has encountered a connection error|timeout exceeded when trying to connect|the database system is (starting up|shutting down|in recovery mode)/i;

/**
 * SQLSTATE classes of a server going away: 08 (connection exception), 57P01-57P03 (admin or
 * crash shutdown, cannot connect now), 53300 (too many connections).
 */
function isServerGoneSqlState(code: string): boolean {
  return /^08[0-9A-Z]{3}$/.test(code) || code === "57P01" || code === "57P02" || code === "57P03" || code === "53300";
}

/** A query sent on the node-postgres pool directly (not through Prisma) found the server away. */
export class DatabaseUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`the database is unavailable: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = "DatabaseUnavailableError";
  }
}

const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

/**
 * For queries made on the pool directly: a socket error there can only be the database's, but
 * carries nothing that says so; it is rethrown as a `DatabaseUnavailableError`.
 */
export function rethrowDatabaseError(error: unknown): never {
  const code = (error as { code?: unknown })?.code;
  if ((typeof code === "string" && SOCKET_CODES.has(code)) || isDatabaseUnavailable(error)) {
    throw new DatabaseUnavailableError(error);
  }
  throw error;
}
