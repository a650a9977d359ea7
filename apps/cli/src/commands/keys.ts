import { parseArgs } from "node:util";
import { ApiKeyRepository, createPrismaClient } from "@mixdown/db";
import { UsageError, withDatabase } from "../database.ts";

export const keysUsage = `./mixdown.sh keys create --name NAME [--caller ID]   create a key (printed once, on the last line)
./mixdown.sh keys revoke <id|prefix>                 revoke a key
./mixdown.sh keys list                               list keys (never the keys themselves)`;

export async function keysCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const [action, ...rest] = argv;
  switch (action) {
    case "create": {
      const { values } = parseArgs({ args: rest, options: { name: { type: "string" }, caller: { type: "string" } } });
      if (!values.name) throw new UsageError("keys create needs --name NAME");
      if (values.caller !== undefined && !/^\d+$/.test(values.caller)) throw new UsageError("--caller takes a numeric caller id");
      const created = await withDatabase(env, (url) =>
        withKeys(url, (keys) =>
          keys.createApiKey({ name: values.name!, callerId: values.caller === undefined ? undefined : Number(values.caller) }),
        ),
      );
      console.log(`Created key ${created.id} (${created.prefix}…) for caller ${created.callerId}. It is shown only now:`);
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
      ]);
      printTable(["ID", "PREFIX", "NAME", "CALLER", "CREATED", "STATUS"], rows);
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
  for (const row of [header, ...rows]) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd());
}
