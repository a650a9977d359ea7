import { randomBytes } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { applyMigrations } from "@mixdown/db";
import { scratchDir } from "./processes.ts";
import { type RunningPostgres, startPostgres } from "./postgres.ts";
import { type RunningRedis, startRedis } from "./redis.ts";
import { type RunningS3, startS3 } from "./s3.ts";

export interface TestStackOptions {
  /** Which backend `STORAGE_DRIVER` selects; the S3 server runs either way. */
  storage: "s3" | "local";
  /** Start Redis with append-only persistence (for tests that restart it). */
  redisAppendOnly?: boolean;
}

export interface TestStack {
  /** Settings for `loadConfig(env)`: every service of this stack, unique per stack. */
  env: Record<string, string>;
  postgres: RunningPostgres;
  redis: RunningRedis;
  s3: RunningS3;
  stop(): Promise<void>;
}

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

/**
 * Real Postgres (migrated), Redis and S3 for one test file, on fresh ports and directories, so
 * test files can run one after another (or side by side) without sharing state.
 */
export async function startTestStack(options: TestStackOptions): Promise<TestStack> {
  const bucket = "mixdown-test";
  const started: Array<{ stop(): Promise<void> }> = [];
  const track = <T extends { stop(): Promise<void> }>(service: T) => (started.push(service), service);
  try {
    const [postgres, redis, s3, scratch] = await Promise.all([
      startPostgres().then(track),
      startRedis({ appendOnly: options.redisAppendOnly }).then(track),
      startS3({ bucket }).then(track),
      scratchDir(),
    ]);
    started.push({ stop: () => rm(scratch, { recursive: true, force: true }) });
    await applyMigrations(postgres.url);
    const localDir = path.join(scratch, "storage");
    const tmpDir = path.join(scratch, "tmp");
    await Promise.all([mkdir(localDir), mkdir(tmpDir)]);

    const env: Record<string, string> = {
      NODE_ENV: "test",
      LOG_LEVEL: "error",
      HOST: "127.0.0.1",
      PORT: "0",
      PUBLIC_BASE_URL: "http://127.0.0.1",
      TMP_DIR: tmpDir,
      DATABASE_URL: postgres.url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: `mixdown-test-${randomBytes(4).toString("hex")}`,
      AUTO_MIGRATE: "false",
      STORAGE_DRIVER: options.storage,
      STORAGE_LOCAL_DIR: localDir,
      S3_ENDPOINT: s3.endpoint,
      S3_REGION: s3.region,
      S3_BUCKET: s3.bucket,
      S3_ACCESS_KEY_ID: s3.accessKeyId,
      S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      S3_FORCE_PATH_STYLE: "true",
      SIGNED_URL_SECRET: randomBytes(24).toString("base64url"),
      WORKER_HEALTH_PORT: "0",
      MODELS_DIR: path.join(repoRoot, "models"),
    };
    let stopped: Promise<void> | undefined;
    return {
      env,
      postgres,
      redis,
      s3,
      stop() {
        stopped ??= stopAll(started);
        return stopped;
      },
    };
  } catch (error) {
    await stopAll(started);
    throw error;
  }
}

async function stopAll(services: Array<{ stop(): Promise<void> }>): Promise<void> {
  const results = await Promise.allSettled(services.map((s) => s.stop()));
  const failure = results.find((r) => r.status === "rejected");
  if (failure) throw (failure as PromiseRejectedResult).reason;
}
