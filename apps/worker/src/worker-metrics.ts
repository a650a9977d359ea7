import { createHash, timingSafeEqual } from "node:crypto";
import type { Job, Worker } from "bullmq";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { diskFreeBytes } from "@mixdown/storage";

/** The kind label shared with the API's metrics: `vocal_separation`, `stem_split`, `voice_conversion`, ... */
function kindOf(queue: string, job: Job | undefined): string {
  const kind = queue === "separation" && typeof job?.data?.kind === "string" ? (job.data.kind as string) : queue;
  return kind.replaceAll("-", "_");
}

/**
 * A worker process's metrics: jobs ended and their durations by kind, and how busy each queue's
 * BullMQ Worker is. Fed by the Workers' events only, so the job handlers know nothing of it.
 */
export class WorkerMetrics {
  readonly registry = new Registry();
  private readonly ended: Counter<"kind" | "status">;
  private readonly retried: Counter<"kind">;
  private readonly duration: Histogram<"kind" | "status">;
  private readonly concurrency: Gauge<"queue">;
  private readonly provider: Gauge<"model" | "requested" | "provider">;
  private readonly swept: Counter;
  private readonly sweptBytes: Counter;
  private readonly retentionJobs: Counter<"kind" | "files">;
  private readonly retentionObjects: Counter<"files">;
  private readonly retentionBytes: Counter<"files">;
  private readonly retentionLastSweep: Gauge;
  private readonly loaded: Gauge<"pool">;
  private tmpDir: string | undefined;
  private readonly active = new Map<string, Set<string>>();

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.ended = new Counter({
      name: "mixdown_jobs_ended_total",
      help: "Jobs this worker ended, by kind and status (success; error after the last attempt; cancelled while it ran)",
      labelNames: ["kind", "status"],
      registers,
    });
    this.retried = new Counter({
      name: "mixdown_job_attempts_failed_total",
      help: "Failed attempts that will be retried, by kind",
      labelNames: ["kind"],
      registers,
    });
    this.duration = new Histogram({
      name: "mixdown_job_duration_seconds",
      help: "Time from the start of a job's last attempt to its end, by kind and status",
      labelNames: ["kind", "status"],
      buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
      registers,
    });
    const active = this.active;
    new Gauge({
      name: "mixdown_worker_active_jobs",
      help: "Jobs this worker is running now, by queue (busy slots; idle = concurrency - active)",
      labelNames: ["queue"],
      registers,
      collect() {
        for (const [queue, jobs] of active) this.set({ queue }, jobs.size);
      },
    });
    this.concurrency = new Gauge({
      name: "mixdown_worker_concurrency",
      help: "Jobs this worker may run at once, by queue (WORKER_CONCURRENCY_*)",
      labelNames: ["queue"],
      registers,
    });
    this.provider = new Gauge({
      name: "mixdown_worker_execution_provider",
      help: "1 for the onnxruntime provider each separation model runs on (provider) and the one configured (requested); they differ after a fallback to cpu",
      labelNames: ["model", "requested", "provider"],
      registers,
    });
    this.swept = new Counter({
      name: "mixdown_worker_job_folders_swept_total",
      help: "Job folders in TMP_DIR/jobs that no live job owned (their worker was killed), removed by this worker's sweeps",
      registers,
    });
    this.sweptBytes = new Counter({
      name: "mixdown_worker_job_folder_swept_bytes_total",
      help: "Bytes those swept job folders held",
      registers,
    });
    this.retentionJobs = new Counter({
      name: "mixdown_retention_expired_jobs_total",
      help: "Ended jobs whose inputs or outputs (files) the retention sweeps of this worker deleted (RETENTION_*_MINUTES), by kind",
      labelNames: ["kind", "files"],
      registers,
    });
    this.retentionObjects = new Counter({
      name: "mixdown_retention_deleted_objects_total",
      help: "Stored objects the retention sweeps of this worker deleted: a job's uploaded inputs or its outputs",
      labelNames: ["files"],
      registers,
    });
    this.retentionBytes = new Counter({
      name: "mixdown_retention_deleted_bytes_total",
      help: "Bytes those deleted objects held",
      labelNames: ["files"],
      registers,
    });
    this.retentionLastSweep = new Gauge({
      name: "mixdown_retention_last_sweep_timestamp_seconds",
      help: "When this worker last finished a retention sweep (one worker sweeps at a time: take the max over workers)",
      registers,
    });
    this.loaded = new Gauge({
      name: "mixdown_worker_models_loaded",
      help: "1 while a thread pool's threads (and the models they load) are up, 0 once WORKER_MODEL_IDLE_SECONDS of idleness unloaded them, by pool",
      labelNames: ["pool"],
      registers,
    });
    const metrics = this;
    new Gauge({
      name: "mixdown_disk_free_bytes",
      help: "Free bytes on the filesystem of a directory the process writes (dir: TMP_DIR; jobs wait under WORKER_MIN_FREE_DISK_MB)",
      labelNames: ["dir"],
      registers,
      async collect() {
        if (metrics.tmpDir) this.set({ dir: "TMP_DIR" }, await diskFreeBytes(metrics.tmpDir).catch(() => Number.NaN));
      },
    });
  }

  /** Job folders the sweeper removed (job-folders.ts): left by killed workers. */
  jobFoldersSwept(folders: number, bytes: number): void {
    this.swept.inc(folders);
    this.sweptBytes.inc(bytes);
  }

  /** A retention sweep's batch: `jobs` of `kind` lost their `files` (RetentionSweeper's metrics). */
  retentionExpired(files: "inputs" | "outputs", kind: string, jobs: number): void {
    this.retentionJobs.inc({ kind, files }, jobs);
  }

  retentionDeleted(files: "inputs" | "outputs", objects: number, bytes: number): void {
    this.retentionObjects.inc({ files }, objects);
    this.retentionBytes.inc({ files }, bytes);
  }

  retentionSweepEnded(at: Date): void {
    this.retentionLastSweep.set(at.getTime() / 1000);
  }

  /** A thread pool unloaded for idleness (false), or loaded again by a job (true). */
  modelsLoaded(pool: string, loaded: boolean): void {
    this.loaded.set({ pool }, loaded ? 1 : 0);
  }

  /** TMP_DIR, whose free space each scrape reports. */
  watchFreeDisk(tmpDir: string): void {
    this.tmpDir = tmpDir;
  }

  /** Where a separation model runs, once its threads have loaded it. */
  executionProvider(model: string, requested: string, provider: string): void {
    this.provider.set({ model, requested, provider }, 1);
  }

  /** Follows one BullMQ Worker through its events. */
  watch(queue: string, worker: Worker, concurrency: number): void {
    const running = new Set<string>();
    this.active.set(queue, running);
    this.concurrency.set({ queue }, concurrency);
    worker.on("active", (job) => running.add(String(job.id)));
    // A cancelled job completes its BullMQ entry too (no retry); runJob's outcome tells them apart.
    worker.on("completed", (job, outcome) => {
      running.delete(String(job.id));
      // Its end could not be written (PostgreSQL away): the reconciler runs it again.
      if (outcome === "end-unwritten") this.retried.inc({ kind: kindOf(queue, job) });
      else this.end(queue, job, outcome === "cancelled" ? "cancelled" : "success");
    });
    worker.on("failed", (job) => {
      if (job) running.delete(String(job.id));
      // BullMQ sets finishedOn only when the job moved to failed for good; a retry leaves it unset.
      if (job?.finishedOn) this.end(queue, job, "error");
      else this.retried.inc({ kind: kindOf(queue, job) });
    });
  }

  private end(queue: string, job: Job, status: string): void {
    const kind = kindOf(queue, job);
    this.ended.inc({ kind, status });
    if (job.processedOn && job.finishedOn)
      this.duration.observe({ kind, status }, Math.max(0, job.finishedOn - job.processedOn) / 1000);
  }
}

const digest = (text: string) => createHash("sha256").update(text).digest();

/** `Authorization: Bearer <token>`, compared by digest so the timing shows nothing of the token. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^bearer\s+(.+)$/i.exec(header?.trim() ?? "");
  return match !== null && timingSafeEqual(digest(match[1]!), digest(token));
}
