import { parseArgs } from "node:util";
import { ApiKeyRepository, createPrismaClient, type KeyRateLimits } from "@mixdown/db";
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

const describeLimit = (limit: number | null) => (limit === null ? "default" : limit === 0 ? "unlimited" : String(limit));

export async function keysCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const [action, ...rest] = argv;
  switch (action) {
    case "create": {
      const { values } = parseArgs({
        args: rest,
        options: { name: { type: "string" }, caller: { type: "string" }, ...LIMIT_OPTIONS },
      });
      if (!values.name) throw new UsageError("keys create needs --name NAME");
      if (values.caller !== undefined && !/^\d+$/.test(values.caller)) throw new UsageError("--caller takes a numeric caller id");
      const limits = parseLimits(values, false);
      const created = await withDatabase(env, (url) =>
        withKeys(url, (keys) =>
          keys.createApiKey({
            name: values.name!,
            callerId: values.caller === undefined ? undefined : Number(values.caller),
            ...limits,
          }),
        ),
      );
      console.log(`Created key ${created.id} (${created.prefix}…) for caller ${created.callerId}. It is shown only now:`);
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
      ]);
      printTable(["ID", "PREFIX", "NAME", "CALLER", "CREATED", "STATUS", "READS/MIN", "WRITES/MIN"], rows);
      console.log(
        "READS/MIN, WRITES/MIN: a key's own limits; default = RATE_LIMIT_READS/WRITES_PER_MINUTE of the API, unlimited = none.",
      );
      return 0;
    }
    default:
      throw new UsageError(`Usage:\n${keysUsage}`);
  }
}

async function withKeys<T>(databaseUrl: string, work: (keys: ApiKeyRepository) => Promise<T>): Promise<T> {
  const prisma = createPrismaClient(databaseUrl);
  try {
    return await work(new ApiKeyRepository(prisma));
  } finally {
    await prisma.$disconnect();
  }
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
