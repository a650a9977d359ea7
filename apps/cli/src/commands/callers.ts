import path from "node:path";
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import { loadConfig } from "@mixdown/config";
import { createJobTables, createPrismaClient, ResourceDeletions, type PrismaClient, type PurgeReport } from "@mixdown/db";
import { createQueues, type JobQueues } from "@mixdown/queue";
import { createStorage } from "@mixdown/storage";
import { UsageError, withDatabase } from "../database.ts";
import { persistentSecret, readRunningStack, stateDir } from "../local-state.ts";
import { callersUsage } from "../usage.ts";

export async function callersCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const [action, ...rest] = argv;
  if (action !== "purge") throw new UsageError(`Usage:\n${callersUsage}`);
  const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { yes: { type: "boolean" } } });
  if (positionals.length !== 1)
    throw new UsageError("callers purge takes one caller: its id, or its name when one caller has it");
  return withDatabase(env, async (databaseUrl) => {
    const dir = stateDir(env);
    const running = readRunningStack(dir);
    const config = loadConfig({
      STORAGE_LOCAL_DIR: path.join(dir, "storage"),
      SIGNED_URL_SECRET: env.SIGNED_URL_SECRET ?? persistentSecret(dir),
      ...(running ? { REDIS_URL: running.redisUrl } : {}),
      ...env,
      DATABASE_URL: databaseUrl,
    });
    const prisma = createPrismaClient(databaseUrl);
    const storage = createStorage(config);
    // Redis tells workers to stop a cancelled job and holds the jobs' queue entries: where none is
    // known (no REDIS_URL, no running `up`), no worker runs either, and an entry left behind finds its row gone.
    const queues =
      running || env.REDIS_URL
        ? createQueues({ connection: config.REDIS_URL, prefix: config.QUEUE_PREFIX, attempts: config.JOB_ATTEMPTS })
        : null;
    try {
      const caller = await findCaller(prisma, positionals[0]!);
      const counts = await countOf(prisma, caller.id);
      console.log(`Caller ${caller.id} ("${caller.name}"): ${counts}.`);
      if (!values.yes && !(await confirmed(`Delete all of it, files included, for good? Type "yes": `))) {
        console.error("Nothing was deleted.");
        return 1;
      }
      const report = await purgeWith(prisma, storage, queues, caller.id);
      printReport(report, queues !== null);
      return 0;
    } finally {
      await queues?.close().catch(() => undefined);
      await storage.close();
      await prisma.$disconnect();
    }
  });
}

async function findCaller(prisma: PrismaClient, named: string): Promise<{ id: number; name: string }> {
  if (/^\d{1,10}$/.test(named)) {
    const byId = await prisma.caller.findUnique({ where: { id: Number(named) } });
    if (byId) return byId;
  }
  const byName = await prisma.caller.findMany({ where: { name: named }, orderBy: { id: "asc" } });
  if (byName.length === 1) return byName[0]!;
  if (byName.length > 1) {
    throw new UsageError(
      `${byName.length} callers are named "${named}" (ids ${byName.map((c) => c.id).join(", ")}): name one by its id`,
    );
  }
  throw new UsageError(`No caller "${named}": \`./mixdown.sh keys list\` shows each key's caller (id and name).`);
}

async function countOf(prisma: PrismaClient, callerId: number): Promise<string> {
  const where = { where: { callerId } };
  const [separations, conversions, tts, blends, models, keys] = await Promise.all([
    prisma.separationJob.count(where),
    prisma.voiceConversionJob.count(where),
    prisma.ttsJob.count(where),
    prisma.voiceBlendJob.count(where),
    prisma.voiceModel.count({ where: { ownerId: callerId } }),
    prisma.apiKey.count(where),
  ]);
  return `${separations} separation and stem split jobs, ${conversions} voice conversions, ${tts} text-to-speech jobs, ${blends} voice blends, ${models} voice models, ${keys} API keys`;
}

async function confirmed(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await Promise.race([rl.question(question), new Promise<string>((r) => rl.once("close", () => r("")))]);
    return answer.trim().toLowerCase() === "yes";
  } finally {
    rl.close();
  }
}

async function purgeWith(
  prisma: PrismaClient,
  storage: ReturnType<typeof createStorage>,
  queues: JobQueues | null,
  callerId: number,
): Promise<PurgeReport> {
  const tables = createJobTables(prisma);
  const deletions = new ResourceDeletions(prisma, {
    storage,
    async cancelJob(kind, rowId) {
      if (!(await tables[kind].cancel(rowId))) return;
      await queues?.announceCancel({ kind, rowId }).catch(() => undefined);
    },
    removeQueueEntry: async (kind, rowId) => {
      await queues?.removeEntry(kind, rowId);
    },
  });
  const report = await deletions.purgeCaller(callerId);
  if (!report) throw new UsageError(`caller ${callerId} is gone already`);
  return report;
}

function printReport(report: PurgeReport, reachedRedis: boolean): void {
  const jobs = Object.entries(report.jobs)
    .map(([kind, n]) => `${n} ${kind}`)
    .join(", ");
  console.log(`Purged caller ${report.callerId} ("${report.callerName}"):`);
  console.log(`  jobs: ${jobs} (running ones cancelled first)`);
  console.log(`  voice models: ${report.voiceModels}`);
  console.log(`  stored files: ${report.storedObjects}`);
  console.log(`  API keys: ${report.apiKeys}, dashboard sign-in codes: ${report.dashboardSignInCodes}`);
  console.log(`  idempotency keys: ${report.idempotencyKeys}, webhook deliveries: ${report.webhookDeliveries}`);
  if (!reachedRedis) {
    console.log("  queue entries: not reached (no REDIS_URL and no running `up`); any left finds its job gone and does nothing");
  }
}
