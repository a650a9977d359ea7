import { RECORD_KINDS, type RecordKind } from "@mixdown/jobs";
import { Prisma, type PrismaClient } from "../generated/prisma/client.ts";
import { jobFileTables } from "./kinds/index.ts";

/** A calendar month in UTC: `label` is `YYYY-MM`, usage in it ended at `from` or later and before `to`. */
export interface UsageMonth {
  label: string;
  from: Date;
  to: Date;
}

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;

/** The month `label` (`YYYY-MM`) names, or null when it names none. */
export function parseUsageMonth(label: string): UsageMonth | null {
  const match = MONTH.exec(label);
  if (!match) return null;
  return monthOf(Number(match[1]), Number(match[2]) - 1);
}

/** The calendar month (UTC) `at` falls in. */
export function usageMonthOf(at: Date): UsageMonth {
  return monthOf(at.getUTCFullYear(), at.getUTCMonth());
}

function monthOf(year: number, monthIndex: number): UsageMonth {
  const from = new Date(Date.UTC(year, monthIndex, 1));
  const to = new Date(Date.UTC(year, monthIndex + 1, 1));
  return { label: `${String(year).padStart(4, "0")}-${String(monthIndex + 1).padStart(2, "0")}`, from, to };
}

/** One record kind's successful jobs in a month. */
export interface KindUsage {
  kind: RecordKind;
  seconds: number;
  jobs: number;
}

/** Where a key stands against its monthly quota in one month. */
export interface QuotaState {
  minutes: number;
  /** Seconds of the month's successful jobs. */
  usedSeconds: number;
  /** Seconds held by the key's jobs still running (the current month only; 0 for another). */
  runningSeconds: number;
  /** What a new job may still take: the quota less the used and running seconds, at least 0. */
  remainingSeconds: number;
  /** When the month ends and the quota starts again from 0. */
  resetsAt: Date;
}

/** A create the quota refuses: where the key stands, and the seconds the job would have taken. */
export interface QuotaRefusal extends QuotaState {
  apiKeyId: number;
  requestedSeconds: number;
}

/** One key's usage in a month, as the operator's `keys usage` lists it. */
export interface KeyUsage {
  apiKeyId: number;
  name: string;
  prefix: string;
  callerId: number;
  callerName: string;
  revokedAt: Date | null;
  monthlyQuotaMinutes: number | null;
  kinds: KindUsage[];
  seconds: number;
  jobs: number;
}

/** The two-int advisory lock namespace of quota admissions ("usage" in ASCII); the key's id is the second int. */
const QUOTA_LOCK = 0x75736167;

type Db = PrismaClient | Prisma.TransactionClient;

/**
 * Usage per API key (the UsageRecords that jobs' successes write, `endJobRow`) and its monthly
 * quota: what a key used in a month, by kind, and whether a new job's seconds still fit.
 */
export class UsageRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Every record kind's seconds and jobs of `apiKeyId` in `month` (kinds without a job at 0). */
  async ofKey(apiKeyId: number, month: UsageMonth): Promise<KindUsage[]> {
    const groups = await this.prisma.usageRecord.groupBy({
      by: ["jobKind"],
      where: { apiKeyId, endedAt: { gte: month.from, lt: month.to } },
      _sum: { seconds: true },
      _count: { _all: true },
    });
    return byKind(groups);
  }

  /** Where `apiKeyId` stands against its quota in `month`; null when it has none. */
  async quotaOf(apiKeyId: number, month: UsageMonth, now = new Date()): Promise<QuotaState | null> {
    const key = await this.prisma.apiKey.findUnique({ where: { id: apiKeyId }, select: { monthlyQuotaMinutes: true } });
    if (key?.monthlyQuotaMinutes == null) return null;
    return quotaState(this.prisma, apiKeyId, key.monthlyQuotaMinutes, month, now);
  }

  /**
   * Whether a job of `seconds` fits in `apiKeyId`'s quota now: the refusal when it does not
   * (the month's used seconds, plus the key's running jobs', plus these, over the quota), null
   * when it does or the key has no quota. A check before anything is stored; `admit` decides.
   */
  async check(apiKeyId: number, seconds: number, now = new Date()): Promise<QuotaRefusal | null> {
    const state = await this.quotaOf(apiKeyId, usageMonthOf(now), now);
    return state && refusalOf(apiKeyId, state, seconds);
  }

  /**
   * Writes a job's row with `create` when its `seconds` fit in the key's quota, else writes
   * nothing and answers the refusal. For a key with a quota the check and the write run in one
   * transaction under a lock of the key, so creates racing each other are admitted one at a time,
   * each seeing the running jobs of those before it: a burst cannot overrun the quota.
   */
  async admit<T>(
    apiKeyId: number,
    seconds: number,
    create: (db: Prisma.TransactionClient) => Promise<T>,
    now = new Date(),
  ): Promise<{ created: T } | { refused: QuotaRefusal }> {
    const key = await this.prisma.apiKey.findUnique({ where: { id: apiKeyId }, select: { monthlyQuotaMinutes: true } });
    const minutes = key?.monthlyQuotaMinutes;
    if (minutes == null) return { created: await create(this.prisma) };
    return this.prisma.$transaction(
      async (tx) => {
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(${QUOTA_LOCK}::int4, ${apiKeyId}::int4)`;
        const refused = refusalOf(apiKeyId, await quotaState(tx, apiKeyId, minutes, usageMonthOf(now), now), seconds);
        return refused ? { refused } : { created: await create(tx) };
      },
      { maxWait: 10_000, timeout: 30_000 },
    );
  }

  /** Every key's usage in `month` (revoked keys too), oldest key first. */
  async everyKey(month: UsageMonth): Promise<KeyUsage[]> {
    const [keys, groups] = await Promise.all([
      this.prisma.apiKey.findMany({ orderBy: { id: "asc" }, include: { caller: true } }),
      this.prisma.usageRecord.groupBy({
        by: ["apiKeyId", "jobKind"],
        where: { endedAt: { gte: month.from, lt: month.to }, apiKeyId: { not: null } },
        _sum: { seconds: true },
        _count: { _all: true },
      }),
    ]);
    return keys.map((key) => {
      const kinds = byKind(groups.filter((g) => g.apiKeyId === key.id));
      return {
        apiKeyId: key.id,
        name: key.name,
        prefix: key.keyPrefix,
        callerId: key.callerId,
        callerName: key.caller.name,
        revokedAt: key.revokedAt,
        monthlyQuotaMinutes: key.monthlyQuotaMinutes,
        kinds,
        ...totalOf(kinds),
      };
    });
  }
}

/** The seconds and jobs of several kinds together. */
export function totalOf(kinds: readonly KindUsage[]): { seconds: number; jobs: number } {
  return {
    seconds: kinds.reduce((sum, k) => sum + k.seconds, 0),
    jobs: kinds.reduce((sum, k) => sum + k.jobs, 0),
  };
}

function byKind(groups: Array<{ jobKind: string; _sum: { seconds: number | null }; _count: { _all: number } }>): KindUsage[] {
  return RECORD_KINDS.map((kind) => {
    const group = groups.find((g) => g.jobKind === kind);
    return { kind, seconds: group?._sum.seconds ?? 0, jobs: group?._count._all ?? 0 };
  });
}

function refusalOf(apiKeyId: number, state: QuotaState, seconds: number): QuotaRefusal | null {
  return seconds > state.remainingSeconds ? { ...state, apiKeyId, requestedSeconds: seconds } : null;
}

async function quotaState(db: Db, apiKeyId: number, minutes: number, month: UsageMonth, now: Date): Promise<QuotaState> {
  const current = now >= month.from && now < month.to;
  const [used, running] = await Promise.all([
    db.usageRecord.aggregate({
      where: { apiKeyId, endedAt: { gte: month.from, lt: month.to } },
      _sum: { seconds: true },
    }),
    current ? runningSeconds(db, apiKeyId) : Promise.resolve(0),
  ]);
  const usedSeconds = used._sum.seconds ?? 0;
  return {
    minutes,
    usedSeconds,
    runningSeconds: running,
    remainingSeconds: Math.max(0, minutes * 60 - usedSeconds - running),
    resetsAt: month.to,
  };
}

/**
 * The seconds `apiKeyId`'s running jobs hold: they count against the quota from their create, so
 * that jobs not yet ended cannot take it over (a blend holds none). Every job table whose rows
 * count their `audioSeconds` holds its running rows' seconds; a running pipeline holds its
 * input's seconds once for each step whose job it has not made yet (a made one is a running row
 * of its kind, counted there; a recombine is its convert's job).
 */
async function runningSeconds(db: Db, apiKeyId: number): Promise<number> {
  const holding = jobFileTables()
    .map(({ files }) => files.table)
    .filter((table) => table !== "Pipeline")
    .map(
      (table) =>
        Prisma.sql`SELECT "audioSeconds" FROM ${Prisma.raw(`"${table}"`)} WHERE "apiKeyId" = ${apiKeyId} AND "status" = 'running'`,
    );
  const [row] = await db.$queryRaw<Array<{ seconds: number }>>`
    SELECT COALESCE(SUM("audioSeconds"), 0)::float8 AS seconds FROM (
      ${Prisma.join(holding, " UNION ALL ")}
      UNION ALL
      SELECT p."audioSeconds" * (
        SELECT COUNT(*) FROM "PipelineStep" s WHERE s."pipelineId" = p."id" AND s."jobId" IS NULL AND s."step" <> 'recombine'
      ) AS "audioSeconds" FROM "Pipeline" p WHERE p."apiKeyId" = ${apiKeyId} AND p."status" = 'running'
    ) AS running`;
  return Number(row?.seconds ?? 0);
}
