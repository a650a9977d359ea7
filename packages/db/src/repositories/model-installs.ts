import type { ModelInstall, PrismaClient } from "../generated/prisma/client.ts";
import type { JobTable } from "./job-table.ts";
import { pageArgs, type Page, type PageRequest } from "./paging.ts";

/** What a finished install publishes: the installer's own line (`installed NAME (...)`). */
export interface ModelInstalled {
  summary: string;
}

const running = (id: number) => ({ id, status: "running" as const });

/**
 * Model installs as a job table (`model-install`): a running ModelInstall row is the job, so the
 * reconciler queues one whose entry is missing, as for any job. No caller owns it (an operator
 * asked for it for the whole server), so it writes no webhook and no usage.
 */
export function modelInstallTable(prisma: PrismaClient): JobTable<ModelInstall, ModelInstalled> {
  const end = async (id: number, data: object) =>
    (await prisma.modelInstall.updateMany({ where: running(id), data: { ...data, jobEndTime: new Date() } })).count === 1;
  return {
    findRunnable: (id) => prisma.modelInstall.findFirst({ where: running(id) }),
    callerOf: () => null,
    async markStarted(id, firstAttempt) {
      await prisma.modelInstall.updateMany({
        where: running(id),
        data: firstAttempt ? { jobStartTime: new Date(), progress: 1 } : { progress: 1 },
      });
    },
    async setProgress(id, progress) {
      await prisma.modelInstall.updateMany({ where: { ...running(id), progress: { lt: progress } }, data: { progress } });
    },
    complete: (id, { summary }) => end(id, { status: "success", progress: 100, summary }),
    fail: (id, message) => end(id, { status: "error", errorMessage: message }),
    cancel: (id) => end(id, { status: "cancelled" }),
    async findRunning(createdBefore, afterId, take) {
      const rows = await prisma.modelInstall.findMany({
        where: { status: "running", createdAt: { lt: createdBefore }, id: { gt: afterId } },
        orderBy: { id: "asc" },
        take,
        select: { id: true, enqueuedAt: true, createdAt: true },
      });
      return rows.map((r) => ({
        ref: { queue: "model-install", payload: { installId: r.id } },
        enqueuedAt: r.enqueuedAt,
        createdAt: r.createdAt,
      }));
    },
    isRunning: async (id) => (await prisma.modelInstall.count({ where: running(id) })) > 0,
    async markEnqueued(id) {
      await prisma.modelInstall.updateMany({ where: { id }, data: { enqueuedAt: new Date() } });
    },
  };
}

/** The API's reads and writes of model installs. */
export class ModelInstallRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * The running install of `name`, else a new one (`created`). The partial unique index on the
   * running rows' names makes two racing requests find one row: the loser of the insert reads the
   * winner's.
   */
  async start(name: string, apiKeyId: number): Promise<{ install: ModelInstall; created: boolean }> {
    for (let attempt = 0; ; attempt++) {
      const runningInstall = await this.prisma.modelInstall.findFirst({ where: { name, status: "running" } });
      if (runningInstall) return { install: runningInstall, created: false };
      try {
        return { install: await this.prisma.modelInstall.create({ data: { name, apiKeyId } }), created: true };
      } catch (error) {
        if (attempt > 0 || (error as { code?: string }).code !== "P2002") throw error;
      }
    }
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.modelInstall.updateMany({ where: { id }, data: { enqueuedAt: new Date() } });
  }

  find(id: number): Promise<ModelInstall | null> {
    return this.prisma.modelInstall.findUnique({ where: { id } });
  }

  async list(request: PageRequest): Promise<Page<ModelInstall>> {
    const [rows, total] = await Promise.all([
      this.prisma.modelInstall.findMany(pageArgs(request)),
      this.prisma.modelInstall.count(),
    ]);
    return { rows, total };
  }

  /** The newest install of each name (a catalogue listing shows it beside the entry). */
  async latestByName(): Promise<Map<string, ModelInstall>> {
    const rows = await this.prisma.modelInstall.findMany({ distinct: ["name"], orderBy: [{ name: "asc" }, { id: "desc" }] });
    return new Map(rows.map((r) => [r.name, r]));
  }
}
