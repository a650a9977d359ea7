/**
 * The two public kinds that share the `separation` queue and table. Each has three spellings,
 * all derived from here: the payload's and the storage keys' (`vocal-separation`), the database
 * enum's (`vocal_separation`) and the API path's (`vocal-separations`).
 */
export const SEPARATION_KINDS = {
  "vocal-separation": {
    dbKind: "vocal_separation",
    apiPath: "vocal-separations",
    noun: "vocal separation",
    tag: "Vocal separations",
  },
  "stem-split": { dbKind: "stem_split", apiPath: "stem-splits", noun: "stem split", tag: "Stem splits" },
} as const;
export type SeparationKind = keyof typeof SEPARATION_KINDS;
export type SeparationDbKind = (typeof SEPARATION_KINDS)[SeparationKind]["dbKind"];

/** The payload kind of a database enum value (`stem_split` -> `stem-split`). */
export function separationKindOf(dbKind: SeparationDbKind): SeparationKind {
  const found = (Object.keys(SEPARATION_KINDS) as SeparationKind[]).find((k) => SEPARATION_KINDS[k].dbKind === dbKind);
  if (!found) throw new Error(`unknown separation kind ${String(dbKind)}`);
  return found;
}

/** What each kind's queue entries carry: only the row id (and the separation kind); the row holds the rest. */
export interface PayloadByKind {
  separation: { kind: SeparationKind; jobId: number };
  "voice-conversion": { jobId: number };
  "voice-blend": { jobId: number };
  /** Speaks a text with the base synthesizer, then converts it with a voice model (the TtsJob row holds the text). */
  tts: { jobId: number };
  /** Finds an uploaded file's key, tempo and beats, loudness and duration (the AudioAnalysisJob row holds the upload). */
  "audio-analysis": { jobId: number };
  /** Repairs an uploaded vocal with the steps the caller chose (the VocalRepairJob row holds the upload and the steps). */
  "vocal-repair": { jobId: number };
  /** Masters an uploaded track to a reference track (Matchering) or a loudness target (loudnorm); the MasteringJob row holds the uploads and settings. */
  mastering: { jobId: number };
  /** Sings a harmony a third or a sixth from an uploaded vocal, in key, note by note (the HarmonyJob row holds the upload and the choices). */
  harmony: { jobId: number };
  /** Runs a pipeline's steps in turn, each as an ordinary job of its kind (the Pipeline row and its PipelineSteps hold the rest). */
  pipeline: { jobId: number };
  /** Renders a ready voice model's demo clip and cover; the VoiceModel row is the record. */
  "voice-model-media": { voiceModelId: number };
  /** Builds a native voice model from its stored reference recording; the VoiceModel row is the record. */
  "voice-model-build": { voiceModelId: number };
  /** POSTs a job's end to its webhook URL; the WebhookDelivery row (the outbox) holds the rest. */
  "webhook-delivery": { deliveryId: number };
  /** Downloads, verifies and installs a model catalogue entry into MODELS_DIR; the ModelInstall row holds the name. */
  "model-install": { installId: number };
}

/** A kind of queued work. The name is also its BullMQ queue's name and its job ids' prefix. */
export type JobKind = keyof PayloadByKind;
export type SeparationPayload = PayloadByKind["separation"];
export type VoiceConversionPayload = PayloadByKind["voice-conversion"];
export type VoiceBlendPayload = PayloadByKind["voice-blend"];
export type VoiceModelMediaPayload = PayloadByKind["voice-model-media"];
export type VoiceModelBuildPayload = PayloadByKind["voice-model-build"];
export type WebhookDeliveryPayload = PayloadByKind["webhook-delivery"];
export type ModelInstallPayload = PayloadByKind["model-install"];

/** A queue entry to be: one member per kind (a discriminated union on `queue`). */
export type JobRef = { [K in JobKind]: { queue: K; payload: PayloadByKind[K] } }[JobKind];

/** The public record a kind's row is presented as (what GET answers and a webhook will carry). */
export type JobRecordType =
  | "separationJob"
  | "voiceConversionJob"
  | "voiceBlendJob"
  | "ttsJob"
  | "audioAnalysisJob"
  | "vocalRepairJob"
  | "masteringJob"
  | "harmonyJob"
  | "pipeline"
  | "voiceModel";

export interface JobKindEntry<K extends JobKind> {
  /** The row the entry works on: a job row, or a voice model for the kinds without a job table. */
  rowId(payload: PayloadByKind[K]): number;
  /** The BullMQ job name (shown by queue dashboards). */
  jobName(payload: PayloadByKind[K]): string;
  /** Jobs one worker process runs at once: a setting (with its default), or a fixed number. */
  concurrency: { setting: `WORKER_CONCURRENCY_${string}`; default: number } | { fixed: number };
  /** Tries per job (`"configured"`: JOB_ATTEMPTS) and the first retry's delay, doubled on each further retry. */
  retry: { attempts: "configured" | number; backoffDelayMs: number };
  /** How the row is presented to its caller (null: the work has no public record of its own). */
  record: JobRecordType | null;
  /**
   * Where the row lives: a job table with `status`, a VoiceModel row whose state stands for the
   * job's, a WebhookDelivery row (delivered or given up = ended), or a ModelInstall row (an
   * operator's install of a model catalogue entry: no caller owns it, no webhook or usage).
   */
  rows: "job-table" | "voice-model" | "webhook-outbox" | "model-install";
  /**
   * Whether a GPU worker node takes it: the `gpu` group of WORKER_QUEUES (the compose files' GPU
   * workers run `GPU_WORKER_QUEUES=gpu`). True for the work that runs or merges models; a build
   * from a PyTorch file (Debian's CPU PyTorch) and a webhook's POST stay with the main worker.
   */
  gpu: boolean;
}

const byJobId = { rowId: (p: { jobId: number }) => p.jobId } as const;
const byVoiceModelId = { rowId: (p: { voiceModelId: number }) => p.voiceModelId } as const;

/**
 * Every job kind, declared once. Queues, job tables (`@mixdown/db`'s `jobTables`), the reconciler,
 * the worker's handler map and the config's concurrency settings are all keyed by it, so a kind
 * added here does not compile until each of them knows it.
 */
export const JOB_CATALOGUE = {
  separation: {
    ...byJobId,
    jobName: (p) => p.kind,
    concurrency: { setting: "WORKER_CONCURRENCY_SEPARATION", default: 1 },
    retry: { attempts: "configured", backoffDelayMs: 5_000 },
    record: "separationJob",
    rows: "job-table",
    gpu: true,
  },
  "voice-conversion": {
    ...byJobId,
    jobName: () => "voice-conversion",
    concurrency: { setting: "WORKER_CONCURRENCY_VOICE_CONVERSION", default: 1 },
    retry: { attempts: "configured", backoffDelayMs: 5_000 },
    record: "voiceConversionJob",
    rows: "job-table",
    gpu: true,
  },
  "voice-blend": {
    ...byJobId,
    jobName: () => "voice-blend",
    concurrency: { setting: "WORKER_CONCURRENCY_VOICE_BLEND", default: 2 },
    retry: { attempts: "configured", backoffDelayMs: 5_000 },
    record: "voiceBlendJob",
    rows: "job-table",
    gpu: true,
  },
  tts: {
    ...byJobId,
    jobName: () => "tts",
    concurrency: { setting: "WORKER_CONCURRENCY_TTS", default: 1 },
    retry: { attempts: "configured", backoffDelayMs: 5_000 },
    record: "ttsJob",
    rows: "job-table",
    gpu: true,
  },
  "audio-analysis": {
    ...byJobId,
    jobName: () => "audio-analysis",
    concurrency: { setting: "WORKER_CONCURRENCY_AUDIO_ANALYSIS", default: 1 },
    retry: { attempts: "configured", backoffDelayMs: 5_000 },
    record: "audioAnalysisJob",
    rows: "job-table",
    // Essentia's WebAssembly and ffmpeg run on the CPU; a GPU node has nothing to add
    gpu: false,
  },
  "vocal-repair": {
    ...byJobId,
    jobName: () => "vocal-repair",
    concurrency: { setting: "WORKER_CONCURRENCY_VOCAL_REPAIR", default: 1 },
    retry: { attempts: "configured", backoffDelayMs: 5_000 },
    record: "vocalRepairJob",
    rows: "job-table",
    // isolating the vocal and removing its reverb run the separation models
    gpu: true,
  },
  mastering: {
    ...byJobId,
    jobName: () => "mastering",
    concurrency: { setting: "WORKER_CONCURRENCY_MASTERING", default: 1 },
    retry: { attempts: "configured", backoffDelayMs: 5_000 },
    record: "masteringJob",
    rows: "job-table",
    // FFTs in a thread and ffmpeg: CPU work
    gpu: false,
  },
  harmony: {
    ...byJobId,
    jobName: () => "harmony",
    concurrency: { setting: "WORKER_CONCURRENCY_HARMONY", default: 1 },
    retry: { attempts: "configured", backoffDelayMs: 5_000 },
    record: "harmonyJob",
    rows: "job-table",
    // isolating the vocal of a mix runs the separation models
    gpu: true,
  },
  pipeline: {
    ...byJobId,
    jobName: () => "pipeline",
    // A pipeline's own work is waiting on its steps' jobs (which their kinds' queues run); many
    // can wait at once without taking a core.
    concurrency: { setting: "WORKER_CONCURRENCY_PIPELINE", default: 8 },
    retry: { attempts: "configured", backoffDelayMs: 5_000 },
    record: "pipeline",
    rows: "job-table",
    gpu: false,
  },
  "voice-model-media": {
    ...byVoiceModelId,
    jobName: () => "voice-model-media",
    // A demo takes a second or two of a conversion thread; one at a time leaves the others to jobs callers wait on.
    concurrency: { fixed: 1 },
    retry: { attempts: "configured", backoffDelayMs: 5_000 },
    record: "voiceModel",
    rows: "voice-model",
    gpu: true,
  },
  "voice-model-build": {
    ...byVoiceModelId,
    jobName: () => "voice-model-build",
    // A build is a few seconds of one core; callers wait for conversions more than for new voices.
    concurrency: { fixed: 1 },
    retry: { attempts: "configured", backoffDelayMs: 5_000 },
    record: "voiceModel",
    rows: "voice-model",
    gpu: false,
  },
  "webhook-delivery": {
    rowId: (p: { deliveryId: number }) => p.deliveryId,
    jobName: () => "webhook-delivery",
    // Deliveries mostly wait on the network, not the CPU.
    concurrency: { setting: "WORKER_CONCURRENCY_WEBHOOK_DELIVERY", default: 4 },
    // Retries after 5, 10, 20, 40, 80, 160 and 320 s: 8 tries over 635 s (~10.6 min), the
    // receiver's outage window the issue asks to ride out. WEBHOOK_RETRY_DELAY_MS overrides the 5 s.
    retry: { attempts: 8, backoffDelayMs: 5_000 },
    record: null,
    rows: "webhook-outbox",
    gpu: false,
  },
  "model-install": {
    rowId: (p: { installId: number }) => p.installId,
    jobName: () => "model-install",
    // One download and conversion at a time: they share the disk and the network with the jobs.
    concurrency: { fixed: 1 },
    // A download cut short resumes from its verified partial file on the next try.
    retry: { attempts: "configured", backoffDelayMs: 5_000 },
    record: null,
    rows: "model-install",
    // Every worker shares MODELS_DIR in the layouts that install from the API (`up`, compose); the
    // main worker takes it, as it takes a PyTorch conversion.
    gpu: false,
  },
} as const satisfies { [K in JobKind]: JobKindEntry<K> };

export const JOB_KINDS = Object.keys(JOB_CATALOGUE) as JobKind[];

/**
 * The names WORKER_QUEUES takes besides the kinds themselves: `all` (the default) and `gpu` (a GPU
 * node's share, the kinds whose entry says `gpu: true`). Deployment files name groups, never
 * lists of kinds, so a kind added to the catalogue runs everywhere without editing them.
 */
export const QUEUE_GROUPS = {
  all: JOB_KINDS,
  gpu: JOB_KINDS.filter((kind) => JOB_CATALOGUE[kind].gpu),
} as const satisfies Record<string, readonly JobKind[]>;
export type QueueGroup = keyof typeof QUEUE_GROUPS;

/**
 * A WORKER_QUEUES value as the kinds it names (groups expanded, each kind once, in the
 * catalogue's order), and the names in it that are neither a kind nor a group.
 */
export function queuesOf(list: string): { kinds: JobKind[]; unknown: string[] } {
  const names = list
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  const wanted = new Set<JobKind>();
  const unknown: string[] = [];
  for (const name of names) {
    if (Object.hasOwn(QUEUE_GROUPS, name)) for (const kind of QUEUE_GROUPS[name as QueueGroup]) wanted.add(kind);
    else if (isJobKind(name)) wanted.add(name);
    else unknown.push(name);
  }
  return { kinds: JOB_KINDS.filter((kind) => wanted.has(kind)), unknown };
}

/**
 * The kinds whose rows live in a job table (`rows: "job-table"`): the ones a caller creates,
 * lists, cancels and gets webhooks for, and /metrics counts. Derived from the catalogue, so a kind
 * added there joins every list keyed by these (cancels, idempotency, counts, metrics, webhooks).
 */
export type JobTableKind = {
  [K in JobKind]: (typeof JOB_CATALOGUE)[K]["rows"] extends "job-table" ? K : never;
}[JobKind];
export const JOB_TABLE_KINDS = JOB_KINDS.filter((k): k is JobTableKind => JOB_CATALOGUE[k].rows === "job-table");

type Snake<S extends string> = S extends `${infer A}-${infer B}` ? `${A}_${Snake<B>}` : S;
/**
 * A job table kind as the records, the metrics and the idempotency keys spell it: the separation
 * table's two kinds by their database enum (`vocal_separation`, `stem_split`), the others with
 * `_` (`voice_conversion`, `tts`).
 */
export type RecordKind = SeparationDbKind | Snake<Exclude<JobTableKind, "separation">>;
export const RECORD_KINDS: readonly RecordKind[] = JOB_TABLE_KINDS.flatMap((k): RecordKind[] =>
  k === "separation"
    ? Object.values(SEPARATION_KINDS).map((s) => s.dbKind)
    : [k.replaceAll("-", "_") as Snake<Exclude<JobTableKind, "separation">>],
);

/** The entry of a kind, typed by its payload. */
export function jobKind<K extends JobKind>(kind: K): JobKindEntry<K> {
  return JOB_CATALOGUE[kind] as unknown as JobKindEntry<K>;
}

export function isJobKind(name: string): name is JobKind {
  return Object.hasOwn(JOB_CATALOGUE, name);
}

/** The id of the row a queue entry works on. */
export function rowIdOf(ref: JobRef): number {
  return (jobKind(ref.queue).rowId as (p: unknown) => number)(ref.payload);
}

/** The BullMQ job name of an entry: the separation kind, else the kind's name. */
export function bullJobName(ref: JobRef): string {
  return (jobKind(ref.queue).jobName as (p: unknown) => string)(ref.payload);
}

/**
 * The BullMQ job id of a row: derived from the row id so that adding the same row twice is a
 * no-op (`separation-12`, `voice-conversion-3`, `voice-model-build-5`).
 */
export function bullJobId(kind: JobKind, rowId: number): string {
  return `${kind}-${rowId}`;
}

/** The concurrency settings the catalogue names, each once, with its default (the config schema is built from these). */
export type ConcurrencySetting = Extract<(typeof JOB_CATALOGUE)[JobKind]["concurrency"], { setting: string }>["setting"];
export function concurrencySettings(): Array<{ setting: ConcurrencySetting; default: number }> {
  const out = new Map<ConcurrencySetting, number>();
  for (const kind of JOB_KINDS) {
    const c = JOB_CATALOGUE[kind].concurrency;
    if ("setting" in c) out.set(c.setting, c.default);
  }
  return [...out].map(([setting, value]) => ({ setting, default: value }));
}

/** Jobs of `kind` one worker process runs at once, under `settings` (the parsed config). */
export function concurrencyOf(kind: JobKind, settings: Record<ConcurrencySetting, number>): number {
  const c = JOB_CATALOGUE[kind].concurrency;
  return "setting" in c ? settings[c.setting] : c.fixed;
}
