import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient } from "./generated/prisma/client.ts";

const pools = new WeakMap<PrismaClient, pg.Pool>();

/**
 * One Prisma client over a node-postgres pool; call `$disconnect()` on shutdown (it ends the
 * pool too). The hot reads that Prisma makes costly (a page and its total) go to the same pool
 * directly: see `poolOf`.
 */
export function createPrismaClient(databaseUrl: string): PrismaClient {
  const pool = new pg.Pool({ connectionString: databaseUrl });
  // An idle connection's error (the server restarted) only drops it from the pool; the next
  // query connects again. Without a listener, node-postgres would throw it at the process.
  pool.on("error", () => {});
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
  pools.set(prisma, pool);
  return prisma;
}

/** The node-postgres pool under a client made by `createPrismaClient`. */
export function poolOf(prisma: PrismaClient): pg.Pool {
  const pool = pools.get(prisma);
  if (!pool) throw new Error("this PrismaClient was not made by createPrismaClient: it has no pool to read from");
  return pool;
}
