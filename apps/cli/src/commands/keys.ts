import { parseArgs } from "node:util";
import {
  ApiKeyRepository,
  createPrismaClient,
  parseUsageMonth,
  usageMonthOf,
  UsageRepository,
  type KeyRateLimits,
  type PrismaClient,
} from "@mixdown/db";
import { RECORD_KINDS } from "@mixdown/jobs";
import { UsageError, withDatabase } from "../database.ts";
import { keysUsage } from "../usage.ts";

const LIMIT_OPTIONS = { "reads-per-minute": { type: "string" }, "writes-per-minute": { type: "string" } } as const;

/** `--reads-per-minute` / `--writes-per-minute`: a count, 0 for unlimited, or (when allowed) `default`. */
function parseLimits(
  values: { "reads-per-minute"?: string; "writes-per-minute"?: string },
  allowDefault: boolean,
): Partial<KeyRateLimits> {
  const parse = (flag: string, raw: string | undefined): number | null | undefined => {
    if (raw === undefined) return undefined;
    if (allowDefault && raw === "default") return null;
    if (!/^\d{1,10}$/.test(raw) || Number(raw) > 2147483647) {
      throw new UsageError(
        `--${flag} takes a whole number of requests per minute (0 = unlimited)${allowDefault ? " or `default`" : ""}; got "${raw}"`,
      );
    }
    return Number(raw);
  };
  return {
    readsPerMinute: parse("reads-per-minute", values["reads-per-minute"]),
    writesPerMinute: parse("writes-per-minute", values["writes-per-minute"]),
  };
}

/** `--quota-minutes` / `keys quota`'s value: whole minutes of audio a month, or (when allowed) `none`. */
function parseQuota(raw: string, allowNone: boolean): number | null {
  if (allowNone && raw === "none") return null;
  if (!/^\d{1,10}$/.test(raw) || Number(raw) > 2147483647) {
    throw new UsageError(`a quota is a whole number of minutes of audio a month${allowNone ? " or `none`" : ""}; got "${raw}"`);
  }
  return Number(raw);
}

const describeQuota = (minutes: number | null) => (minutes === null ? "none" : `${minutes} min`);
const asMinutes = (seconds: number) => (seconds / 60).toFixed(1);

const describeLimit = (limit: number | null) => (limit === null ? "default" : limit === 0 ? "unlimited" : String(limit));

export async function keysCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const [action, ...rest] = argv;
  switch (action) {
    case "create": {
      const { values } = parseArgs({
        args: rest,
        options: {
          name: { type: "string" },
          caller: { type: "string" },
          "quota-minutes": { type: "string" },
          operator: { type: "boolean" },
          ...LIMIT_OPTIONS,
        },
      });
      if (!values.name) throw new UsageError("keys create needs --name NAME");
      if (values.caller !== undefined && !/^\d+$/.test(values.caller)) throw new UsageError("--caller takes a numeric caller id");
      const limits = parseLimits(values, false);
      const quota = values["quota-minutes"] === undefined ? null : parseQuota(values["quota-minutes"], false);
      const created = await withDatabase(env, (url) =>
        withKeys(url, (keys) =>
          keys.createApiKey({
            name: values.name!,
            callerId: values.caller === undefined ? undefined : Number(values.caller),
            ...limits,
            monthlyQuotaMinutes: quota,
            operator: values.operator ?? false,
          }),
        ),
      );
      const kind = values.operator ? "operator key" : "key";
      console.log(`Created ${kind} ${created.id} (${created.prefix}…) for caller ${created.callerId}. It is shown only now:`);
      // Before the key: scripts take the last line as the key.
      console.log(`webhook-secret: ${created.webhookSecret}`);
      console.log(created.key);
      return 0;
    }
    case "revoke": {
      const { positionals } = parseArgs({ args: rest, allowPositionals: true, options: {} });
      if (positionals.length !== 1) throw new UsageError("keys revoke takes one key id or prefix");
      const revoked = await withDatabase(env, (url) => withKeys(url, (keys) => keys.revokeApiKey(positionals[0]!)));
      if (!revoked) {
        console.error(`No key matches "${positionals[0]}".`);
        return 1;
      }
      console.log(`Revoked key ${revoked.id} (${revoked.prefix}…, "${revoked.name}").`);
      return 0;
    }
    case "webhook-secret": {
      const { positionals } = parseArgs({ args: rest, allowPositionals: true, options: {} });
      if (positionals.length !== 1) throw new UsageError("keys webhook-secret takes one key id or prefix");
      const found = await withDatabase(env, (url) => withKeys(url, (keys) => keys.webhookSecret(positionals[0]!)));
      if (!found) {
        console.error(`No key matches "${positionals[0]}".`);
        return 1;
      }
      console.log(found.webhookSecret);
      return 0;
    }
    case "limits": {
      const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: LIMIT_OPTIONS });
      if (positionals.length !== 1) throw new UsageError("keys limits takes one key id or prefix");
      const limits = parseLimits(values, true);
      if (limits.readsPerMinute === undefined && limits.writesPerMinute === undefined) {
        throw new UsageError("keys limits needs --reads-per-minute and/or --writes-per-minute");
      }
      const updated = await withDatabase(env, (url) => withKeys(url, (keys) => keys.setRateLimits(positionals[0]!, limits)));
      if (!updated) {
        console.error(`No key matches "${positionals[0]}".`);
        return 1;
      }
      const { readsPerMinute, writesPerMinute } = updated.rateLimits;
      console.log(
        `Key ${updated.id} (${updated.prefix}…): reads per minute ${describeLimit(readsPerMinute)}, writes per minute ${describeLimit(writesPerMinute)}; running APIs apply it within 5 seconds.`,
      );
      return 0;
    }
    case "quota": {
      const { positionals } = parseArgs({ args: rest, allowPositionals: true, options: {} });
      if (positionals.length !== 2) throw new UsageError("keys quota takes a key id or prefix and a number of minutes (or none)");
      const minutes = parseQuota(positionals[1]!, true);
      const updated = await withDatabase(env, (url) => withKeys(url, (keys) => keys.setMonthlyQuota(positionals[0]!, minutes)));
      if (!updated) {
        console.error(`No key matches "${positionals[0]}".`);
        return 1;
      }
      console.log(
        `Key ${updated.id} (${updated.prefix}…): monthly quota ${minutes === null ? "removed" : `${minutes} minutes of audio`}; the next create is held to it.`,
      );
      return 0;
    }
    case "usage": {
      const { values } = parseArgs({ args: rest, options: { month: { type: "string" } } });
      const month = values.month === undefined ? usageMonthOf(new Date()) : parseUsageMonth(values.month);
      if (!month) throw new UsageError(`--month takes a month as YYYY-MM; got "${values.month}"`);
      const list = await withDatabase(env, (url) => withPrisma(url, (prisma) => new UsageRepository(prisma).everyKey(month)));
      console.log(`Usage in ${month.label} (UTC, ${month.from.toISOString()} to ${month.to.toISOString()}), minutes of audio:`);
      const rows = list.map((k) => [
        String(k.apiKeyId),
        `${k.prefix}…`,
        k.name,
        `${k.callerId} (${k.callerName})`,
        ...k.kinds.map((kind) => `${asMinutes(kind.seconds)} (${kind.jobs})`),
        asMinutes(k.seconds),
        String(k.jobs),
        describeQuota(k.monthlyQuotaMinutes),
        k.monthlyQuotaMinutes === null ? "-" : asMinutes(Math.max(0, k.monthlyQuotaMinutes * 60 - k.seconds)),
      ]);
      printTable(
        ["ID", "PREFIX", "NAME", "CALLER", ...RECORD_KINDS.map((kind) => kind.toUpperCase()), "MINUTES", "JOBS", "QUOTA", "LEFT"],
        rows,
      );
      console.log(
        "Each kind: minutes of audio (successful jobs). A job counts once, in the month it succeeded; LEFT does not subtract running jobs.",
      );
      return 0;
    }
    case "list": {
      parseArgs({ args: rest, options: {} });
      const list = await withDatabase(env, (url) => withKeys(url, (keys) => keys.listApiKeys()));
      if (list.length === 0) {
        console.log("No keys yet: ./mixdown.sh keys create --name NAME");
        return 0;
      }
      const rows = list.map((k) => [
        String(k.id),
        `${k.prefix}…`,
        k.name,
        `${k.callerId} (${k.callerName})`,
        k.createdAt.toISOString(),
        k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : "active",
        describeLimit(k.rateLimits.readsPerMinute),
        describeLimit(k.rateLimits.writesPerMinute),
        describeQuota(k.monthlyQuotaMinutes),
        k.operator ? "operator" : "-",
      ]);
      printTable(["ID", "PREFIX", "NAME", "CALLER", "CREATED", "STATUS", "READS/MIN", "WRITES/MIN", "QUOTA/MONTH", "ROLE"], rows);
      console.log(
        "READS/MIN, WRITES/MIN: a key's own limits; default = RATE_LIMIT_READS/WRITES_PER_MINUTE of the API, unlimited = none.",
      );
      return 0;
    }
    default:
      throw new UsageError(`Usage:\n${keysUsage}`);
  }
}

async function withPrisma<T>(databaseUrl: string, work: (prisma: PrismaClient) => Promise<T>): Promise<T> {
  const prisma = createPrismaClient(databaseUrl);
  try {
    return await work(prisma);
  } finally {
    await prisma.$disconnect();
  }
}

function withKeys<T>(databaseUrl: string, work: (keys: ApiKeyRepository) => Promise<T>): Promise<T> {
  return withPrisma(databaseUrl, (prisma) => work(new ApiKeyRepository(prisma)));
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const row of [header, ...rows])
    console.log(
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    );
}
