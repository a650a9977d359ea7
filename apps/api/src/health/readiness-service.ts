import { HealthRepository } from "@mixdown/db";
import type { AppContext } from "../app-context.ts";

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

const describe = (error: unknown) => ((error as Error)?.message ?? String(error)).split("\n")[0]!.slice(0, 200);

/** Asks each backing service for a sign of life, in parallel, each with a deadline. */
export class ReadinessService {
  private readonly database: HealthRepository;

  constructor(private readonly ctx: Pick<AppContext, "prisma" | "queues" | "storage">) {
    this.database = new HealthRepository(ctx.prisma);
  }

  async check(timeoutMs = 2000): Promise<{ postgres: string; redis: string; storage: string }> {
    const probe = (p: Promise<unknown>) =>
      within(p, timeoutMs).then(
        () => "ok",
        (error: unknown) => `unreachable: ${describe(error)}`,
      );
    const [postgres, redis, storage] = await Promise.all([
      probe(this.database.ping()),
      probe(this.ctx.queues.ping()),
      probe(this.ctx.storage.ping()),
    ]);
    return { postgres, redis, storage };
  }
}
