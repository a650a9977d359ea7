import { ConfigError } from "@mixdown/config";
import { UsageError } from "./database.ts";
import { backupUsage, batchUsage, callersUsage, keysUsage, modelsUsage, voicesUsage } from "./usage.ts";

const usage = `Mixdown command line. From the repository root: ./mixdown.sh <command> (it runs pnpm mixdown <command>
with the project's own Node and pnpm).

./mixdown.sh up [--no-worker]   run the whole service locally (embedded PostgreSQL, redis-server,
                                local-disk storage, API, worker) and keep it up: a child that dies
                                is restarted; prints the URL and, last, a fresh key; logs in
                                .mixdown/logs/
./mixdown.sh migrate            apply the committed database migrations
${backupUsage}
${keysUsage}
${callersUsage}
./mixdown.sh separate …         separate a local audio file (see: ./mixdown.sh separate --help)
./mixdown.sh repair …           remove noise and reverb from a local vocal (see: ./mixdown.sh repair --help)
./mixdown.sh harmony …          add a harmony a third or a sixth to a local vocal, in key
                                (see: ./mixdown.sh harmony --help)
./mixdown.sh master …           master a local audio file to a reference track or a loudness
                                target (see: ./mixdown.sh master --help)
${batchUsage}
${modelsUsage}
${voicesUsage}

Commands that need the database use DATABASE_URL, else the local stack of \`mixdown up\`.`;

async function main(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "up":
      return (await import("./commands/up.ts")).upCommand(rest, env);
    case "migrate":
      return (await import("./commands/migrate.ts")).migrateCommand(env);
    case "backup":
      return (await import("./commands/backup.ts")).backupCommand(rest, env);
    case "restore":
      return (await import("./commands/backup.ts")).restoreCommand(rest, env);
    case "keys":
      return (await import("./commands/keys.ts")).keysCommand(rest, env);
    case "callers":
      return (await import("./commands/callers.ts")).callersCommand(rest, env);
    case "voices":
      return (await import("./commands/voices.ts")).voicesCommand(rest, env);
    case "models":
      return (await import("./commands/models.ts")).modelsCommand(rest, env);
    case "separate":
      return (await import("./commands/separate.ts")).separateCommand(rest);
    case "repair":
      return (await import("./commands/repair.ts")).repairCommand(rest);
    case "harmony":
      return (await import("./commands/harmony.ts")).harmonyCommand(rest);
    case "master":
      return (await import("./commands/master.ts")).masterCommand(rest);
    case "batch":
      return (await import("./commands/batch.ts")).batchCommand(rest, env);
    case undefined:
    case "help":
    case "--help":
    case "-h":
      console.log(usage);
      return command === undefined ? 2 : 0;
    default:
      console.error(`Unknown command "${command}".\n\n${usage}`);
      return 2;
  }
}

try {
  process.exitCode = await main(process.argv.slice(2), process.env);
} catch (error) {
  // node:util parseArgs reports unknown options and missing or dash-led values with these codes.
  const badArguments = String((error as { code?: unknown }).code ?? "").startsWith("ERR_PARSE_ARGS_");
  if (
    error instanceof UsageError ||
    error instanceof ConfigError ||
    badArguments ||
    (error as Error).name === "RedisNotInstalledError"
  ) {
    console.error((error as Error).message);
    process.exitCode = 2;
  } else {
    console.error(error);
    process.exitCode = 1;
  }
}
