export { freePort, isAlive, stopChild, superviseChild, testFilesDir } from "./processes.ts";
export {
  startPostgres,
  preparePostgres,
  launchPostgresServer,
  postgresServerUrl,
  ensureDatabase,
  postgresBinDir,
  postgresCanUse,
  type PostgresOptions,
  type PreparedPostgres,
  type RunningPostgres,
} from "./postgres.ts";
export {
  startRedis,
  launchRedisServer,
  findRedisServer,
  RedisNotInstalledError,
  type RedisOptions,
  type RedisServerOptions,
  type RunningRedis,
} from "./redis.ts";
export { startS3, type S3Options, type RunningS3 } from "./s3.ts";
export { startTestStack, type TestStack, type TestStackOptions } from "./test-stack.ts";
export { metricSample } from "./prometheus.ts";
export { typeErrorsOf, typeErrorsWithout } from "./type-check.ts";
