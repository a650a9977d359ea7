import {
  concurrencySettings,
  DEFAULT_ENSEMBLE,
  ENSEMBLE_ALGORITHMS,
  parseModelList,
  type ConcurrencySetting,
} from "@mixdown/jobs";
import { isIP } from "node:net";
import { z } from "zod";

/** `private`, or an IPv4/IPv6 CIDR (`10.0.0.0/8`, `fd00::/8`; a bare address is a /32 or /128). */
function isNetworkEntry(entry: string): boolean {
  if (entry === "private") return true;
  const [address = "", prefix] = entry.split("/");
  const family = isIP(address);
  if (family === 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * A separation model setting: one name, or a comma-separated list of distinct names (an ensemble),
 * read as the list of names.
 */
const modelList = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .superRefine((value, ctx) => {
      const names = parseModelList(value);
      if (names.some((n) => n === "")) ctx.addIssue({ code: "custom", message: `empty model name in "${value}"` });
      else if (new Set(names).size !== names.length)
        ctx.addIssue({ code: "custom", message: `a model named twice in "${value}"` });
    })
    .transform((value) => parseModelList(value));

const MB = 1024 * 1024;

const bool = z
  .union([z.boolean(), z.enum(["true", "false", "1", "0", "yes", "no"])])
  .transform((v) => v === true || v === "true" || v === "1" || v === "yes");

const int = (min: number, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max);

/** WORKER_CONCURRENCY_<KIND>: one per job kind whose catalogue entry names a setting. */
const workerConcurrency = Object.fromEntries(concurrencySettings().map((s) => [s.setting, int(1).default(s.default)])) as Record<
  ConcurrencySetting,
  z.ZodDefault<ReturnType<typeof int>>
>;

/** Every setting of every Mixdown process. `.env.example` documents each one. */
export const EnvSchema = z
  .object({
    NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
    LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),

    // HTTP API
    HOST: z.string().default("0.0.0.0"),
    PORT: int(0, 65535).default(8080),
    /** Absolute base URL clients reach the API at; used for local-disk signed download URLs. */
    PUBLIC_BASE_URL: z.string().url().optional(),
    /**
     * Slow and idle clients: a connection must have sent its request's headers this long after it
     * opened (or after its previous request), else 408 and the connection is closed. Cuts off
     * connections opened and left silent (slowloris) before they add up.
     */
    HTTP_HEADERS_TIMEOUT_SECONDS: int(1).default(10),
    /**
     * The whole request, body included, must have arrived this long after it started, else 408:
     * an upload trickling in a few bytes a second holds a connection and a temporary file at most
     * this long. 600 s lets the largest upload (100 MB) through at 1.4 Mbit/s.
     */
    HTTP_REQUEST_TIMEOUT_SECONDS: int(1).default(600),
    /** Largest request head (request line and headers) in bytes; more is answered 431. */
    HTTP_MAX_HEADER_BYTES: int(1024).default(16 * 1024),
    MAX_SEPARATION_UPLOAD_BYTES: int(1).default(50 * MB),
    MAX_CONVERSION_UPLOAD_BYTES: int(1).default(100 * MB),
    /**
     * Longest audio a job takes, in seconds, whatever its size in bytes: 50 MB of 6 kbit/s Opus
     * is 18 hours, which would hold a worker for hours and need tens of GB for its outputs.
     * Refused at create (422) and by the worker. Default 30 minutes: a song, or an album side.
     */
    MAX_SEPARATION_SECONDS: int(1).default(1800),
    MAX_CONVERSION_SECONDS: int(1).default(1800),
    MAX_PER_PAGE: int(1).default(100),
    /** Longest text `POST /tts` takes (`inputTtsText`), in characters; longer is a 422 naming this limit. */
    MAX_TTS_TEXT_CHARS: int(1, 100_000).default(5000),
    RATE_LIMIT_READS_PER_MINUTE: int(0).default(0),
    RATE_LIMIT_WRITES_PER_MINUTE: int(0).default(0),
    TMP_DIR: z.string().default("/tmp/mixdown"),
    /** `GET /metrics` on the API and on the worker's health port (Prometheus exposition format). */
    METRICS_ENABLED: bool.default(true),
    /** When set, /metrics needs `Authorization: Bearer <METRICS_TOKEN>`. */
    METRICS_TOKEN: z
      .string()
      .min(16, "METRICS_TOKEN must be at least 16 characters (generate one with: openssl rand -hex 24)")
      .optional(),

    /**
     * Set by `mixdown up` for the API and the worker it starts: their stdin is a pipe from `up`,
     * and its end (`up` died, even by SIGKILL) stops them as SIGTERM does, within 5 s at most.
     */
    STOP_WHEN_STDIN_CLOSES: bool.default(false),

    // Postgres and Redis
    DATABASE_URL: z.string().min(1),
    REDIS_URL: z.string().min(1).default("redis://127.0.0.1:6379"),
    QUEUE_PREFIX: z.string().default("mixdown"),
    RECONCILE_INTERVAL_SECONDS: int(0).default(30),
    RECONCILE_GRACE_SECONDS: int(0).default(30),
    AUTO_MIGRATE: bool.default(true),

    // Object storage
    STORAGE_DRIVER: z.enum(["local", "s3"]).default("local"),
    STORAGE_LOCAL_DIR: z.string().default("./.mixdown/storage"),
    S3_ENDPOINT: z.string().url().optional(),
    /** Endpoint put in presigned URLs when clients reach S3 by another address than this process (docker). */
    S3_PUBLIC_ENDPOINT: z.string().url().optional(),
    S3_REGION: z.string().default("us-east-1"),
    S3_BUCKET: z.string().default("mixdown"),
    S3_ACCESS_KEY_ID: z.string().optional(),
    S3_SECRET_ACCESS_KEY: z.string().optional(),
    S3_FORCE_PATH_STYLE: bool.default(true),
    SIGNED_URL_SECRET: z.string().min(16).optional(),
    SIGNED_URL_TTL_SECONDS: int(1).default(900),

    // Worker
    /**
     * Queues this worker serves, comma-separated: job kinds, or the catalogue's groups `all` (every
     * kind) and `gpu` (what a GPU node takes). Checked by the worker at start.
     */
    WORKER_QUEUES: z.string().default("all"),
    ...workerConcurrency,
    WORKER_HEALTH_PORT: int(0, 65535).default(8081),
    /**
     * What the launchers (`up`, the image's entrypoint) start the worker on: `jemalloc`
     * (libjemalloc2, where installed: the sessions share one run's memory) or `system` (glibc's
     * malloc, an onnxruntime arena per session). Read at launch; the worker logs which it runs on.
     */
    MODEL_ALLOCATOR: z.enum(["jemalloc", "system"]).default("jemalloc"),
    JOB_ATTEMPTS: int(1).default(5),
    /**
     * A job's end (and its start) written while PostgreSQL is away is tried this many times, the
     * waits doubling from JOB_END_WRITE_DELAY_MS (1+2+4+8+16+32 s by default); an end still
     * unwritten is left to the reconciler.
     */
    JOB_END_WRITE_ATTEMPTS: int(1).default(7),
    JOB_END_WRITE_DELAY_MS: int(1).default(1_000),
    /**
     * The worker's storage calls (outputs stored, inputs read) are tried this many times while
     * object storage is unavailable, the waits doubling from STORAGE_RETRY_DELAY_MS (up to 30 s);
     * then the attempt fails and the job is retried as JOB_ATTEMPTS allows.
     */
    STORAGE_RETRY_ATTEMPTS: int(1).default(6),
    STORAGE_RETRY_DELAY_MS: int(1).default(1_000),
    /** A job whose worker stops renewing its lock this long (killed, hung) is handed to another worker. */
    WORKER_LOCK_DURATION_MS: int(1000).default(30_000),
    WORKER_STALLED_INTERVAL_MS: int(1000).default(30_000),
    /** Times a job may be found stalled (its worker died) before it fails; each is retried. */
    WORKER_MAX_STALLED_COUNT: int(0).default(5),
    /**
     * A job does not start while TMP_DIR has less free space than this (MB; 0: no floor): it
     * waits up to WORKER_DISK_WAIT_SECONDS for space, then fails with a message naming the floor.
     */
    WORKER_MIN_FREE_DISK_MB: int(0).default(1024),
    WORKER_DISK_WAIT_SECONDS: int(0).default(300),
    /** One model, or several (comma-separated) run as an ensemble; normalised to `a,b`. */
    SEPARATION_MODEL_VOCALS: modelList("vocals"),
    SEPARATION_MODEL_STEMS: modelList("stems"),
    /** How an ensemble named by SEPARATION_MODEL_VOCALS / _STEMS combines its models' outputs. */
    SEPARATION_ENSEMBLE_VOCALS: z.enum(ENSEMBLE_ALGORITHMS).default(DEFAULT_ENSEMBLE),
    SEPARATION_ENSEMBLE_STEMS: z.enum(ENSEMBLE_ALGORITHMS).default(DEFAULT_ENSEMBLE),
    /**
     * The model that splits a vocal separation's whole vocal into lead (`vocals`), `harmony` and
     * `reverb` (stems lead, harmony, reverb). `none` turns the split off; a model that is not
     * installed leaves vocal separations with vocals and backing, and the worker says so at start.
     */
    SEPARATION_MODEL_VOCAL_SPLIT: z.string().default("vocalsplit"),
    /**
     * Where the vocal split runs beside the vocals model, in the same pass: `own` (an inference
     * thread of its own: the two models' runs overlap), `shared` (the vocals model's thread: their
     * runs take turns, and one run's working memory serves both) or `auto` (own with more than two
     * cores). On two cores the turns take the same time and 90-190 MB less (docs/benchmarks.md).
     */
    SEPARATION_VOCAL_SPLIT_THREAD: z.enum(["auto", "own", "shared"]).default("auto"),
    MODELS_DIR: z.string().default("./models"),
    /** Catalogue models `up` and the docker image pull at start (comma-separated); read by the CLI's `models pull --from-env`. */
    MIXDOWN_MODELS: z.string().default(""),
    /** A mirror whose base replaces every catalogue URL's origin (path kept); http(s) or file. */
    MIXDOWN_MODEL_MIRROR: z.string().default(""),
    /** Another catalogue file instead of models/catalogue.json. */
    MIXDOWN_MODEL_CATALOGUE: z.string().default(""),
    /** ContentVec (vec-768-layer-12) ONNX for RVC voice models, relative to MODELS_DIR (or absolute). */
    VOICE_CONTENTVEC_MODEL: z.string().default("voices/vec-768-layer-12.onnx"),
    /** ContentVec's 256-d form (vec-256-layer-9) for RVC v1 voice models, relative to MODELS_DIR (or absolute). */
    VOICE_CONTENTVEC_V1_MODEL: z.string().default("voices/vec-256-layer-9.onnx"),
    /** RMVPE pitch model (ONNX, `voices import-pitch` writes it) for RVC voice models, relative to MODELS_DIR (or absolute). */
    VOICE_RMVPE_MODEL: z.string().default("voices/rmvpe.onnx"),
    /** f0 of RVC conversions: auto = RMVPE when VOICE_RMVPE_MODEL exists, else YIN; rmvpe = RMVPE or fail; yin = YIN. */
    VOICE_PITCH_METHOD: z.enum(["auto", "rmvpe", "yin"]).default("auto"),
    /** Voice models each conversion thread keeps loaded between jobs. */
    VOICE_MODEL_CACHE_SIZE: int(1).default(4),
    /** Largest voice model file POST /voice-models accepts, in bytes. */
    MAX_VOICE_MODEL_UPLOAD_BYTES: int(1).default(200 * MB),
    /** Largest RVC feature index (`indexFile`, faiss IVF-Flat) POST /voice-models accepts, in bytes. */
    MAX_VOICE_MODEL_INDEX_BYTES: int(1).default(1024 * MB),
    /** Largest cover image (`image` part, PNG/JPEG/WebP) POST /voice-models accepts, in bytes. */
    MAX_VOICE_MODEL_IMAGE_BYTES: int(1).default(5 * MB),
    /** Where the separation models run; a provider that cannot load them stops the worker at start (see ORT_PROVIDER_FALLBACK). */
    ORT_EXECUTION_PROVIDER: z.enum(["cpu", "webgpu", "cuda"]).default("cpu"),
    /**
     * `none`: a provider that cannot load the models stops the worker at start, so a GPU node
     * that lost its GPU does not take GPU-sized work at CPU speed unnoticed. `cpu`: warn and run
     * on CPU.
     */
    ORT_PROVIDER_FALLBACK: z.enum(["none", "cpu"]).default("none"),
    ORT_INTRA_OP_THREADS: int(0).default(0),
    ORT_INTER_OP_THREADS: int(0).default(1),
    /**
     * The base synthesizer TTS jobs speak with before the voice model converts the speech: `auto`
     * takes a Piper voice for the text's language when one is installed in TTS_PIPER_DIR, else
     * Festival's HTS voice (cmu_us_slt_arctic_hts) for English when installed, else espeak-ng.
     * `piper` allows only Piper voices.
     */
    TTS_SYNTHESIZER: z.enum(["auto", "piper", "festival", "espeak-ng"]).default("auto"),
    /** Where Piper voices are installed (`<name>.onnx` + `<name>.onnx.json`; `models pull piper-...` puts them there), relative to MODELS_DIR (or absolute). */
    TTS_PIPER_DIR: z.string().default("tts"),
    LOSSLESS_FORMAT: z.enum(["wav", "flac"]).default("wav"),
    LOSSY_BITRATE_KBPS: int(32, 320).default(320),

    // Webhooks
    /**
     * Networks webhook URLs may not reach, comma-separated CIDRs (`10.0.0.0/8,fd00::/8`) and/or
     * `private` (loopback, RFC 1918, link-local, CGNAT, ULA, ...). Empty (default): any address,
     * since a self-hoster's receivers usually live on its own network.
     */
    WEBHOOK_DENIED_NETWORKS: z
      .string()
      .default("")
      .transform((v) =>
        v
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean),
      )
      .superRefine((entries, ctx) => {
        for (const entry of entries) {
          if (!isNetworkEntry(entry))
            ctx.addIssue({
              code: "custom",
              message: `"${entry}" is neither \`private\` nor a CIDR such as 10.0.0.0/8 or fd00::/8`,
            });
        }
      }),
    /** How long one delivery waits for the receiver's answer. */
    WEBHOOK_TIMEOUT_MS: int(100).default(10_000),
    /** The first retry's delay, doubled on each of the 8 tries (5 s: 635 s in all). */
    WEBHOOK_RETRY_DELAY_MS: int(1).default(5_000),
  })
  .superRefine((env, ctx) => {
    if (env.HTTP_HEADERS_TIMEOUT_SECONDS > env.HTTP_REQUEST_TIMEOUT_SECONDS) {
      ctx.addIssue({
        code: "custom",
        path: ["HTTP_HEADERS_TIMEOUT_SECONDS"],
        message: `must not exceed HTTP_REQUEST_TIMEOUT_SECONDS (${env.HTTP_REQUEST_TIMEOUT_SECONDS})`,
      });
    }
    if (env.STORAGE_DRIVER === "s3") {
      for (const key of ["S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"] as const) {
        if (!env[key]) ctx.addIssue({ code: "custom", path: [key], message: `${key} is required when STORAGE_DRIVER=s3` });
      }
    }
    if (env.STORAGE_DRIVER === "local" && !env.SIGNED_URL_SECRET) {
      ctx.addIssue({
        code: "custom",
        path: ["SIGNED_URL_SECRET"],
        message: "SIGNED_URL_SECRET (16+ chars) is required when STORAGE_DRIVER=local",
      });
    }
  });

export type Config = z.infer<typeof EnvSchema>;

export class ConfigError extends Error {}

/** Parses the environment once; a bad setting stops the process with every problem named. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  ${i.path.join(".") || "(env)"}: ${i.message}`).join("\n");
    throw new ConfigError(`Invalid configuration:\n${problems}`);
  }
  return parsed.data;
}

/**
 * Just the database setting, for one-off commands (`mixdown keys`, `mixdown migrate`) that must
 * not demand the storage and worker settings of a server process.
 */
export function loadDatabaseConfig(env: Record<string, string | undefined> = process.env): Pick<Config, "DATABASE_URL"> {
  const parsed = z.object({ DATABASE_URL: EnvSchema.shape.DATABASE_URL }).safeParse(env);
  if (!parsed.success)
    throw new ConfigError("Invalid configuration:\n  DATABASE_URL: required (postgresql://user:password@host:port/database)");
  return parsed.data;
}

const VOICE_MODEL_SETTINGS = [
  "MODELS_DIR",
  "VOICE_CONTENTVEC_MODEL",
  "VOICE_CONTENTVEC_V1_MODEL",
  "VOICE_RMVPE_MODEL",
  "VOICE_PITCH_METHOD",
  "MAX_VOICE_MODEL_UPLOAD_BYTES",
  "MAX_VOICE_MODEL_INDEX_BYTES",
] as const;
export type VoiceModelSettings = Pick<Config, (typeof VOICE_MODEL_SETTINGS)[number]>;

/**
 * Just the voice model settings (where the RVC models' ContentVec and RMVPE files are, the import
 * limits), for `mixdown voices import|list`, which need no server settings.
 */
export function loadVoiceModelSettings(env: Record<string, string | undefined> = process.env): VoiceModelSettings {
  const schema = z.object(Object.fromEntries(VOICE_MODEL_SETTINGS.map((k) => [k, EnvSchema.shape[k]])));
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  ${i.path.join(".") || "(env)"}: ${i.message}`).join("\n");
    throw new ConfigError(`Invalid configuration:\n${problems}`);
  }
  return parsed.data as VoiceModelSettings;
}

/** Base URL for links the API hands out when PUBLIC_BASE_URL is not set. */
export function publicBaseUrl(config: Config): string {
  return (config.PUBLIC_BASE_URL ?? `http://127.0.0.1:${config.PORT}`).replace(/\/+$/, "");
}
