import {
  concurrencySettings,
  DEFAULT_ENSEMBLE,
  ENSEMBLE_ALGORITHMS,
  modelListProblem,
  parseModelList,
  type ConcurrencySetting,
} from "@mixdown/jobs";
import { SchemaCheck, Url, type SchemaProblem } from "@mixdown/schema-check";
import { isIP } from "node:net";
import { Type, type Static, type TNumberOptions, type TObject, type TSchema, type TStringOptions } from "typebox";
import { Value } from "typebox/value";

/**
 * A setting: the schema of its value (its default included), which `Config` is typed by, and how
 * the environment's text becomes that value. Text a setting cannot read is passed on as it is, for
 * its schema to refuse.
 */
interface Setting<S extends TSchema = TSchema> {
  schema: S;
  read: (text: string) => unknown;
  /** What is wrong with the text itself, where only the text as written can say it. */
  textProblem?: (text: string) => string | undefined;
}

const setting = <S extends TSchema>(schema: S, read: (text: string) => unknown = (text) => text): Setting<S> => ({
  schema,
  read,
});

const optional = <S extends TSchema>({ schema, read }: Setting<S>) => setting(Type.Optional(schema), read);

const text = (options: TStringOptions = {}) => setting(Type.String(options));

/** A whole number; its text is read as a number is written in JavaScript (`Number`: `""` is 0). */
const int = (options: TNumberOptions) =>
  setting(Type.Integer({ maximum: Number.MAX_SAFE_INTEGER, ...options }), (text) => Number(text));

const choice = <const V extends string[]>(values: readonly [...V], fallback: V[number]) =>
  setting(Type.Enum(values, { default: fallback }));

const FLAG_WORDS: Record<string, boolean> = { true: true, false: false, 1: true, 0: false, yes: true, no: false };

/**
 * A switch, written `true`/`false`, `1`/`0` or `yes`/`no`. Its schema is the union of its two
 * values rather than Type.Boolean: other text fails as a union nothing matched ("Invalid input"),
 * as it always has.
 */
const flag = (fallback: boolean) =>
  setting(Type.Union([Type.Literal(true), Type.Literal(false)], { default: fallback }), (text) => FLAG_WORDS[text] ?? text);

/** An absolute URL, read without the spaces around it (nor tabs and line breaks within). */
const url = () => setting(Url(), (text) => text.trim().replace(/[\t\n\r]/g, ""));

/** What is wrong with a separation model setting as written (an empty name, a name twice), if anything. */
function modelSettingProblem(text: string): string | undefined {
  return modelListProblem(text) ?? undefined;
}

/**
 * A separation model setting: one name, or a comma-separated list of distinct names (an ensemble),
 * read as the list of names. Its problems are its text's, and quote it as written.
 */
const modelList = (fallback: string) => ({
  ...setting(Type.Array(Type.String(), { default: [fallback] }), parseModelList),
  textProblem: modelSettingProblem,
});

/** `private`, or an IPv4/IPv6 CIDR (`10.0.0.0/8`, `fd00::/8`; a bare address is a /32 or /128). */
function isNetworkEntry(entry: string): boolean {
  if (entry === "private") return true;
  const [address = "", prefix] = entry.split("/");
  const family = isIP(address);
  if (family === 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/** A comma-separated list of networks (CIDRs and `private`), none by default; empty entries are left out. */
const networks = () =>
  setting(
    Type.Array(
      Type.Refine(
        Type.String(),
        isNetworkEntry,
        (entry) => `"${entry}" is neither \`private\` nor a CIDR such as 10.0.0.0/8 or fd00::/8`,
      ),
      { default: [] },
    ),
    (text) =>
      text
        .split(",")
        .map((entry) => entry.trim())
        .filter(Boolean),
  );

const MB = 1024 * 1024;

/** WORKER_CONCURRENCY_<KIND>: one per job kind whose catalogue entry names a setting. */
const workerConcurrency = Object.fromEntries(
  concurrencySettings().map((s) => [s.setting, int({ minimum: 1, default: s.default })]),
) as Record<ConcurrencySetting, ReturnType<typeof int>>;

/** Every setting of every Mixdown process. `.env.example` documents each one. */
const SETTINGS = {
  NODE_ENV: choice(["development", "production", "test"], "development"),
  LOG_LEVEL: choice(["fatal", "error", "warn", "info", "debug", "trace", "silent"], "info"),

  // HTTP API
  HOST: text({ default: "0.0.0.0" }),
  PORT: int({ minimum: 0, maximum: 65535, default: 8080 }),
  /** Absolute base URL clients reach the API at; used for local-disk signed download URLs. */
  PUBLIC_BASE_URL: optional(url()),
  /**
   * Slow and idle clients: a connection must have sent its request's headers this long after it
   * opened (or after its previous request), else 408 and the connection is closed. Cuts off
   * connections opened and left silent (slowloris) before they add up.
   */
  HTTP_HEADERS_TIMEOUT_SECONDS: int({ minimum: 1, default: 10 }),
  /**
   * The whole request, body included, must have arrived this long after it started, else 408:
   * an upload trickling in a few bytes a second holds a connection and a temporary file at most
   * this long. 600 s lets the largest upload (100 MB) through at 1.4 Mbit/s.
   */
  HTTP_REQUEST_TIMEOUT_SECONDS: int({ minimum: 1, default: 600 }),
  /** Largest request head (request line and headers) in bytes; more is answered 431. */
  HTTP_MAX_HEADER_BYTES: int({ minimum: 1024, default: 16 * 1024 }),
  MAX_SEPARATION_UPLOAD_BYTES: int({ minimum: 1, default: 50 * MB }),
  MAX_CONVERSION_UPLOAD_BYTES: int({ minimum: 1, default: 100 * MB }),
  /**
   * Longest audio a job takes, in seconds, whatever its size in bytes: 50 MB of 6 kbit/s Opus
   * is 18 hours, which would hold a worker for hours and need tens of GB for its outputs.
   * Refused at create (422) and by the worker. Default 30 minutes: a song, or an album side.
   */
  MAX_SEPARATION_SECONDS: int({ minimum: 1, default: 1800 }),
  MAX_CONVERSION_SECONDS: int({ minimum: 1, default: 1800 }),
  MAX_PER_PAGE: int({ minimum: 1, default: 100 }),
  /** Files one `POST /batches` takes (file parts); more is a 413 naming this setting. */
  MAX_BATCH_FILES: int({ minimum: 1, default: 500 }),
  /** Bytes of all the files of one `POST /batches` together (each file also within MAX_SEPARATION_UPLOAD_BYTES); more is a 413. Default 2 GiB. */
  MAX_BATCH_BYTES: int({ minimum: 1, default: 2048 * MB }),
  /**
   * Running jobs (of every kind) one caller may have when a batch is created: a batch that would
   * take the caller past it is refused (429 naming it), nothing stored. What keeps one key's backlog
   * bounded; fairness between keys is the queues' priorities (docs/ARCHITECTURE.md, Batches).
   */
  MAX_CALLER_JOBS_IN_FLIGHT: int({ minimum: 1, default: 1000 }),
  /** Longest text `POST /tts` takes (`inputTtsText`), in characters; longer is a 422 naming this limit. */
  MAX_TTS_TEXT_CHARS: int({ minimum: 1, maximum: 100_000, default: 5000 }),
  RATE_LIMIT_READS_PER_MINUTE: int({ minimum: 0, default: 0 }),
  RATE_LIMIT_WRITES_PER_MINUTE: int({ minimum: 0, default: 0 }),
  TMP_DIR: text({ default: "/tmp/mixdown" }),
  /** `GET /metrics` on the API and on the worker's health port (Prometheus exposition format). */
  METRICS_ENABLED: flag(true),
  /** When set, /metrics needs `Authorization: Bearer <METRICS_TOKEN>`. */
  METRICS_TOKEN: optional(
    setting(
      Type.Refine(
        Type.String(),
        (token) => token.length >= 16,
        () => "METRICS_TOKEN must be at least 16 characters (generate one with: openssl rand -hex 24)",
      ),
    ),
  ),

  /**
   * Set by `mixdown up` for the API and the worker it starts: their stdin is a pipe from `up`,
   * and its end (`up` died, even by SIGKILL) stops them as SIGTERM does, within 5 s at most.
   */
  STOP_WHEN_STDIN_CLOSES: flag(false),

  // Postgres and Redis
  DATABASE_URL: text({ minLength: 1 }),
  REDIS_URL: text({ minLength: 1, default: "redis://127.0.0.1:6379" }),
  QUEUE_PREFIX: text({ default: "mixdown" }),
  RECONCILE_INTERVAL_SECONDS: int({ minimum: 0, default: 30 }),
  RECONCILE_GRACE_SECONDS: int({ minimum: 0, default: 30 }),
  /** How often a pipeline's job reads its running step's job (its status and progress), in ms. */
  PIPELINE_POLL_MS: int({ minimum: 50, maximum: 60_000, default: 1_000 }),
  /** About how many job status/progress changes the Redis stream keeps: how far back an event stream's `Last-Event-ID` resume reaches. */
  JOB_EVENTS_RETAINED: int({ minimum: 100, default: 10_000 }),
  /** Seconds between an event stream's heartbeat comments (what keeps proxies from closing an idle stream). */
  JOB_EVENTS_HEARTBEAT_SECONDS: int({ minimum: 1, maximum: 300, default: 15 }),
  /** The `retry:` an event stream sends: how long a browser's EventSource waits before it reconnects, in ms. */
  JOB_EVENTS_RETRY_MS: int({ minimum: 100, maximum: 600_000, default: 3000 }),
  /**
   * Events one stream holds for a client that reads slower than they come (one per job: a job's
   * later progress replaces its earlier); past this the stream is closed and the client resumes
   * with `Last-Event-ID`. Bounds the API's memory per slow stream.
   */
  JOB_EVENTS_MAX_PENDING: int({ minimum: 1, default: 256 }),
  AUTO_MIGRATE: flag(true),

  // Object storage
  STORAGE_DRIVER: choice(["local", "s3"], "local"),
  STORAGE_LOCAL_DIR: text({ default: "./.mixdown/storage" }),
  S3_ENDPOINT: optional(url()),
  /** Endpoint put in presigned URLs when clients reach S3 by another address than this process (docker). */
  S3_PUBLIC_ENDPOINT: optional(url()),
  S3_REGION: text({ default: "us-east-1" }),
  S3_BUCKET: text({ default: "mixdown" }),
  S3_ACCESS_KEY_ID: optional(text()),
  S3_SECRET_ACCESS_KEY: optional(text()),
  S3_FORCE_PATH_STYLE: flag(true),
  SIGNED_URL_SECRET: optional(text({ minLength: 16 })),
  SIGNED_URL_TTL_SECONDS: int({ minimum: 1, default: 900 }),
  /**
   * How often the API finishes deletions cut short (a DELETE answered 503 while object storage
   * was down, a process killed mid-deletion), and how long one must have waited first; also once at
   * start. 0 = only at start.
   */
  DELETION_RETRY_SECONDS: int({ minimum: 0, default: 60 }),

  // Worker
  /**
   * Queues this worker serves, comma-separated: job kinds, or the catalogue's groups `all` (every
   * kind) and `gpu` (what a GPU node takes). Checked by the worker at start.
   */
  WORKER_QUEUES: text({ default: "all" }),
  ...workerConcurrency,
  WORKER_HEALTH_PORT: int({ minimum: 0, maximum: 65535, default: 8081 }),
  /**
   * What the launchers (`up`, the image's entrypoint) start the worker on: `jemalloc`
   * (libjemalloc2, where installed: the sessions share one run's memory) or `system` (glibc's
   * malloc, an onnxruntime arena per session). Read at launch; the worker logs which it runs on.
   */
  MODEL_ALLOCATOR: choice(["jemalloc", "system"], "jemalloc"),
  /**
   * A worker's model threads (separation, voice conversion, voice build) that have run nothing
   * this long are terminated with their models, giving their memory back; the next job starts
   * them again and waits for the load. 0: never. Read by the launchers too (jemalloc's decay).
   */
  WORKER_MODEL_IDLE_SECONDS: int({ minimum: 0, default: 300 }),
  JOB_ATTEMPTS: int({ minimum: 1, default: 5 }),
  /**
   * A job's end (and its start) written while PostgreSQL is away is tried this many times, the
   * waits doubling from JOB_END_WRITE_DELAY_MS (1+2+4+8+16+32 s by default); an end still
   * unwritten is left to the reconciler.
   */
  JOB_END_WRITE_ATTEMPTS: int({ minimum: 1, default: 7 }),
  JOB_END_WRITE_DELAY_MS: int({ minimum: 1, default: 1_000 }),
  /**
   * The worker's storage calls (outputs stored, inputs read) are tried this many times while
   * object storage is unavailable, the waits doubling from STORAGE_RETRY_DELAY_MS (up to 30 s);
   * then the attempt fails and the job is retried as JOB_ATTEMPTS allows.
   */
  STORAGE_RETRY_ATTEMPTS: int({ minimum: 1, default: 6 }),
  STORAGE_RETRY_DELAY_MS: int({ minimum: 1, default: 1_000 }),
  /** A job whose worker stops renewing its lock this long (killed, hung) is handed to another worker. */
  WORKER_LOCK_DURATION_MS: int({ minimum: 1000, default: 30_000 }),
  WORKER_STALLED_INTERVAL_MS: int({ minimum: 1000, default: 30_000 }),
  /** Times a job may be found stalled (its worker died) before it fails; each is retried. */
  WORKER_MAX_STALLED_COUNT: int({ minimum: 0, default: 5 }),
  /**
   * A job does not start while TMP_DIR has less free space than this (MB; 0: no floor): it
   * waits up to WORKER_DISK_WAIT_SECONDS for space, then fails with a message naming the floor.
   */
  WORKER_MIN_FREE_DISK_MB: int({ minimum: 0, default: 1024 }),
  WORKER_DISK_WAIT_SECONDS: int({ minimum: 0, default: 300 }),
  /**
   * Retention, in minutes after a job ended (0: kept for good). A job's outputs are deleted
   * RETENTION_OUTPUT_MINUTES after its end (its record then has null URLs and `outputsExpiredAt`),
   * its uploaded inputs RETENTION_INPUT_MINUTES after (nothing reads them once a job has ended),
   * and the ended job's row itself, with whatever files it still has, RETENTION_JOB_MINUTES after.
   * A worker's retention sweep does it every RETENTION_SWEEP_INTERVAL_SECONDS, one sweep at a
   * time across all workers, RETENTION_SWEEP_BATCH jobs per table and step at a time.
   */
  RETENTION_OUTPUT_MINUTES: int({ minimum: 0, default: 7 * 24 * 60 }),
  RETENTION_INPUT_MINUTES: int({ minimum: 0, default: 60 }),
  RETENTION_JOB_MINUTES: int({ minimum: 0, default: 0 }),
  RETENTION_SWEEP_INTERVAL_SECONDS: int({ minimum: 1, default: 300 }),
  RETENTION_SWEEP_BATCH: int({ minimum: 1, maximum: 1000, default: 200 }),
  /** One model, or several (comma-separated) run as an ensemble; read as the list of names. */
  SEPARATION_MODEL_VOCALS: modelList("vocals"),
  SEPARATION_MODEL_STEMS: modelList("stems"),
  /** How an ensemble named by SEPARATION_MODEL_VOCALS / _STEMS combines its models' outputs. */
  SEPARATION_ENSEMBLE_VOCALS: choice(ENSEMBLE_ALGORITHMS, DEFAULT_ENSEMBLE),
  SEPARATION_ENSEMBLE_STEMS: choice(ENSEMBLE_ALGORITHMS, DEFAULT_ENSEMBLE),
  /**
   * The model that splits a vocal separation's whole vocal into lead (`vocals`), `harmony` and
   * `reverb` (stems lead, harmony, reverb). `none` turns the split off; a model that is not
   * installed leaves vocal separations with vocals and backing, and the worker says so at start.
   */
  SEPARATION_MODEL_VOCAL_SPLIT: text({ default: "vocalsplit" }),
  /**
   * Where the vocal split runs beside the vocals model, in the same pass: `own` (an inference
   * thread of its own: the two models' runs overlap), `shared` (the vocals model's thread: their
   * runs take turns, and one run's working memory serves both) or `auto` (own with more than two
   * cores). On two cores the turns take the same time and 90-190 MB less (docs/benchmarks.md).
   */
  SEPARATION_VOCAL_SPLIT_THREAD: choice(["auto", "own", "shared"], "auto"),
  MODELS_DIR: text({ default: "./models" }),
  /** Catalogue models `up` and the docker image pull at start (comma-separated); read by the CLI's `models pull --from-env`. */
  MIXDOWN_MODELS: text({ default: "" }),
  /** A mirror whose base replaces every catalogue URL's origin (path kept); http(s) or file. */
  MIXDOWN_MODEL_MIRROR: text({ default: "" }),
  /** Another catalogue file instead of models/catalogue.json. */
  MIXDOWN_MODEL_CATALOGUE: text({ default: "" }),
  /** ContentVec (vec-768-layer-12) ONNX for RVC voice models, relative to MODELS_DIR (or absolute). */
  VOICE_CONTENTVEC_MODEL: text({ default: "voices/vec-768-layer-12.onnx" }),
  /** ContentVec's 256-d form (vec-256-layer-9) for RVC v1 voice models, relative to MODELS_DIR (or absolute). */
  VOICE_CONTENTVEC_V1_MODEL: text({ default: "voices/vec-256-layer-9.onnx" }),
  /** RMVPE pitch model (ONNX, `voices import-pitch` writes it) for RVC voice models, relative to MODELS_DIR (or absolute). */
  VOICE_RMVPE_MODEL: text({ default: "voices/rmvpe.onnx" }),
  /** f0 of RVC conversions: auto = RMVPE when VOICE_RMVPE_MODEL exists, else YIN; rmvpe = RMVPE or fail; yin = YIN. */
  VOICE_PITCH_METHOD: choice(["auto", "rmvpe", "yin"], "auto"),
  /** Voice models each conversion thread keeps loaded between jobs. */
  VOICE_MODEL_CACHE_SIZE: int({ minimum: 1, default: 4 }),
  /** Largest voice model file POST /voice-models accepts, in bytes. */
  MAX_VOICE_MODEL_UPLOAD_BYTES: int({ minimum: 1, default: 200 * MB }),
  /** Largest RVC feature index (`indexFile`, faiss IVF-Flat) POST /voice-models accepts, in bytes. */
  MAX_VOICE_MODEL_INDEX_BYTES: int({ minimum: 1, default: 1024 * MB }),
  /** Largest cover image (`image` part, PNG/JPEG/WebP) POST /voice-models accepts, in bytes. */
  MAX_VOICE_MODEL_IMAGE_BYTES: int({ minimum: 1, default: 5 * MB }),
  /** Where the separation models run; a provider that cannot load them stops the worker at start (see ORT_PROVIDER_FALLBACK). */
  ORT_EXECUTION_PROVIDER: choice(["cpu", "webgpu", "cuda"], "cpu"),
  /**
   * `none`: a provider that cannot load the models stops the worker at start, so a GPU node
   * that lost its GPU does not take GPU-sized work at CPU speed unnoticed. `cpu`: warn and run
   * on CPU.
   */
  ORT_PROVIDER_FALLBACK: choice(["none", "cpu"], "none"),
  ORT_INTRA_OP_THREADS: int({ minimum: 0, default: 0 }),
  ORT_INTER_OP_THREADS: int({ minimum: 0, default: 1 }),
  /**
   * The base synthesizer TTS jobs speak with before the voice model converts the speech: `auto`
   * takes a Piper voice for the text's language when one is installed in TTS_PIPER_DIR, else
   * Festival's HTS voice (cmu_us_slt_arctic_hts) for English when installed, else espeak-ng.
   * `piper` allows only Piper voices.
   */
  TTS_SYNTHESIZER: choice(["auto", "piper", "festival", "espeak-ng"], "auto"),
  /** Where Piper voices are installed (`<name>.onnx` + `<name>.onnx.json`; `models pull piper-...` puts them there), relative to MODELS_DIR (or absolute). */
  TTS_PIPER_DIR: text({ default: "tts" }),
  LOSSLESS_FORMAT: choice(["wav", "flac"], "wav"),
  LOSSY_BITRATE_KBPS: int({ minimum: 32, maximum: 320, default: 320 }),

  // Webhooks
  /**
   * Networks webhook URLs may not reach, comma-separated CIDRs (`10.0.0.0/8,fd00::/8`) and/or
   * `private` (loopback, RFC 1918, link-local, CGNAT, ULA, ...). Empty (default): any address,
   * since a self-hoster's receivers usually live on its own network.
   */
  WEBHOOK_DENIED_NETWORKS: networks(),
  /** How long one delivery waits for the receiver's answer. */
  WEBHOOK_TIMEOUT_MS: int({ minimum: 100, default: 10_000 }),
  /** The first retry's delay, doubled on each of the 8 tries (5 s: 635 s in all). */
  WEBHOOK_RETRY_DELAY_MS: int({ minimum: 1, default: 5_000 }),
} satisfies Record<string, Setting>;

type Settings = typeof SETTINGS;
type SettingName = keyof Settings;

/** The settings' schemas as one object: `Config` is its type. */
export const EnvSchema = Type.Object(
  Object.fromEntries(Object.entries(SETTINGS).map(([name, { schema }]) => [name, schema])) as {
    [K in SettingName]: Settings[K]["schema"];
  },
);

export type Config = Static<typeof EnvSchema>;

export class ConfigError extends Error {}

/** A check of some of the settings, as one object. */
const checkOf = <K extends SettingName>(names: readonly K[]) =>
  new SchemaCheck(Type.Object(Object.fromEntries(names.map((name) => [name, EnvSchema.properties[name]]))));

const CONFIG_CHECK = new SchemaCheck(EnvSchema);

/**
 * The settings `check` covers, read from `env`: each one's text read as its value, an absent one
 * given its default. With the problems of their texts and values, each named by its setting (an
 * entry of a list by its list), in the settings' order.
 */
function readSettings(check: SchemaCheck<TObject>, env: Record<string, string | undefined>) {
  const values: Record<string, unknown> = {};
  const textProblems: SchemaProblem[] = [];
  for (const name of Object.keys(check.schema.properties)) {
    const { schema, read, textProblem } = SETTINGS[name as SettingName] as Setting;
    const text = env[name];
    if (text !== undefined) {
      const message = textProblem?.(text);
      if (message !== undefined) textProblems.push({ path: [name], message, untyped: false });
      values[name] = read(text);
    } else {
      const value = Value.Default(schema, undefined);
      if (value !== undefined || name in env) values[name] = value;
    }
  }
  const problems = check.problems(values);
  return { values, problems: textProblems.length > 0 ? check.inOrder(values, [...textProblems, ...problems]) : problems };
}

const describeProblems = (problems: SchemaProblem[]) =>
  `Invalid configuration:\n${problems.map((p) => `  ${p.path[0] ?? "(env)"}: ${p.message}`).join("\n")}`;

/** The rules across settings: they read settings of their types, so they run once every setting has its type. */
function acrossSettings(config: Config): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  const problem = (name: SettingName, message: string) => problems.push({ path: [name], message, untyped: false });
  if (config.HTTP_HEADERS_TIMEOUT_SECONDS > config.HTTP_REQUEST_TIMEOUT_SECONDS)
    problem(
      "HTTP_HEADERS_TIMEOUT_SECONDS",
      `must not exceed HTTP_REQUEST_TIMEOUT_SECONDS (${config.HTTP_REQUEST_TIMEOUT_SECONDS})`,
    );
  if (config.STORAGE_DRIVER === "s3")
    for (const key of ["S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"] as const)
      if (!config[key]) problem(key, `${key} is required when STORAGE_DRIVER=s3`);
  if (config.STORAGE_DRIVER === "local" && !config.SIGNED_URL_SECRET)
    problem("SIGNED_URL_SECRET", "SIGNED_URL_SECRET (16+ chars) is required when STORAGE_DRIVER=local");
  return problems;
}

/** Parses the environment once; a bad setting stops the process with every problem named. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const { values, problems } = readSettings(CONFIG_CHECK, env);
  if (problems.every((p) => !p.untyped)) problems.push(...acrossSettings(values as Config));
  if (problems.length > 0) throw new ConfigError(describeProblems(problems));
  return values as Config;
}

const DATABASE_CHECK = checkOf(["DATABASE_URL"]);

/**
 * Just the database setting, for one-off commands (`mixdown keys`, `mixdown migrate`) that must
 * not demand the storage and worker settings of a server process.
 */
export function loadDatabaseConfig(env: Record<string, string | undefined> = process.env): Pick<Config, "DATABASE_URL"> {
  const { values, problems } = readSettings(DATABASE_CHECK, env);
  if (problems.length > 0)
    throw new ConfigError("Invalid configuration:\n  DATABASE_URL: required (postgresql://user:password@host:port/database)");
  return values as Pick<Config, "DATABASE_URL">;
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

const VOICE_MODEL_CHECK = checkOf(VOICE_MODEL_SETTINGS);

/**
 * Just the voice model settings (where the RVC models' ContentVec and RMVPE files are, the import
 * limits), for `mixdown voices import|list`, which need no server settings.
 */
export function loadVoiceModelSettings(env: Record<string, string | undefined> = process.env): VoiceModelSettings {
  const { values, problems } = readSettings(VOICE_MODEL_CHECK, env);
  if (problems.length > 0) throw new ConfigError(describeProblems(problems));
  return values as VoiceModelSettings;
}

/** Base URL for links the API hands out when PUBLIC_BASE_URL is not set. */
export function publicBaseUrl(config: Config): string {
  return (config.PUBLIC_BASE_URL ?? `http://127.0.0.1:${config.PORT}`).replace(/\/+$/, "");
}
