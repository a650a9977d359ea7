export * from "./generated/prisma/client.ts";
export { createPrismaClient, poolOf } from "./client.ts";
export { DatabaseUnavailableError, isDatabaseUnavailable } from "./outage.ts";
export {
  applyMigrations,
  readMigrations,
  defaultMigrationsDir,
  MigrationError,
  type ApplyMigrationsOptions,
  type MigrationFile,
  type MigrationResult,
} from "./migrations.ts";
export {
  ApiKeyRepository,
  API_KEY_PREFIX,
  hashApiKey,
  InvalidRateLimitError,
  type ApiKeySummary,
  type AuthenticatedCaller,
  type CreatedApiKey,
  type KeyRateLimits,
} from "./api-keys.ts";
export { DatabaseSnapshot, DatabaseRestore, installedTables, resetDatabase, type SequenceState } from "./dump.ts";
export { DashboardSignInRepository, DASHBOARD_SIGN_IN_TTL_MS } from "./dashboard-sign-in.ts";
export * from "./repositories/index.ts";
