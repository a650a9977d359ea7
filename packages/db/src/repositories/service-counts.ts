import { JOB_TABLE_KINDS, type RecordKind } from "@mixdown/jobs";
import type { JobStatus, PrismaClient } from "../generated/prisma/client.ts";
import { JOB_TABLE_ROWS } from "./kinds/index.ts";

export type CountedJobKind = RecordKind;

/** Totals for /metrics: cheap grouped counts over the job tables (their status indexes cover them), each kind's from its rows. */
export class ServiceCountRepository {
  constructor(private readonly prisma: PrismaClient) {}

  async jobsByKindAndStatus(): Promise<Array<{ kind: CountedJobKind; status: JobStatus; count: number }>> {
    const counts = await Promise.all(JOB_TABLE_KINDS.map((kind) => JOB_TABLE_ROWS[kind].countByStatus(this.prisma)));
    return counts.flat();
  }
}
