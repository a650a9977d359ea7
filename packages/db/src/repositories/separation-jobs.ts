import type { PrismaClient, SeparationJob, SeparationKind } from "../generated/prisma/client.ts";
import { pageArgs, type Page, type PageRequest } from "./paging.ts";

export interface NewSeparationJob {
  callerId: number;
  kind: SeparationKind;
  inputKey: string;
  inputFormat: string;
  inputFileName?: string | null;
  /** The model the caller chose (null: the worker's setting for the kind); a comma list for an ensemble. */
  model?: string | null;
  /** The ensemble's algorithm when `model` names several. */
  ensemble?: string | null;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
}

/** Vocal separation and stem split rows. */
export class SeparationJobRepository {
  constructor(private readonly prisma: PrismaClient) {}

  create(input: NewSeparationJob): Promise<SeparationJob> {
    return this.prisma.separationJob.create({ data: { ...input, status: "running" } });
  }

  /** The row, only when it belongs to `callerId` and is of `kind`. */
  findForCaller(callerId: number, kind: SeparationKind, id: number): Promise<SeparationJob | null> {
    return this.prisma.separationJob.findFirst({ where: { id, callerId, kind } });
  }

  findById(id: number): Promise<SeparationJob | null> {
    return this.prisma.separationJob.findUnique({ where: { id } });
  }

  async listForCaller(callerId: number, kind: SeparationKind, page: PageRequest): Promise<Page<SeparationJob>> {
    const where = { callerId, kind };
    const [rows, total] = await Promise.all([
      this.prisma.separationJob.findMany({ where, ...pageArgs(page) }),
      this.prisma.separationJob.count({ where }),
    ]);
    return { rows, total };
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.separationJob.updateMany({ where: { id, enqueuedAt: null }, data: { enqueuedAt: new Date() } });
  }

  async delete(id: number): Promise<void> {
    await this.prisma.separationJob.deleteMany({ where: { id } });
  }

  count(where: { callerId?: number; kind?: SeparationKind } = {}): Promise<number> {
    return this.prisma.separationJob.count({ where });
  }
}
