import type { PrismaClient } from "../generated/prisma/client.ts";

/** Readiness: can Postgres answer a query? */
export class HealthRepository {
  constructor(private readonly prisma: PrismaClient) {}

  async ping(): Promise<void> {
    await this.prisma.$queryRaw`SELECT 1`;
  }
}
