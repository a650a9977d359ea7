import type { ServiceCountRepository } from "@mixdown/db";
import { JOB_KINDS as QUEUES, RECORD_KINDS as JOB_KINDS } from "@mixdown/jobs";
import type { JobQueues } from "@mixdown/queue";
import type { FastifyBaseLogger } from "fastify";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { diskFreeBytes } from "@mixdown/storage";
import type { StoredBytes } from "./stored-bytes.ts";

/** BullMQ states reported per queue. */
const QUEUE_STATES = ["waiting", "prioritized", "delayed", "active", "completed", "failed"] as const;
const JOB_STATUSES = ["running", "success", "error", "cancelled"] as const;
/** A scrape must answer even when Redis or Postgres does not; a source slower than this is reported down. */
const SOURCE_TIMEOUT_MS = 2_000;

function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not answer within ${SOURCE_TIMEOUT_MS} ms`)), SOURCE_TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
}

export interface ApiMetricsSources {
  queues: JobQueues;
  counts: ServiceCountRepository;
  log: FastifyBaseLogger;
  /** Object storage, whose contents are counted by area and kind (at most every 5 minutes). */
  stored?: StoredBytes;
  /** Directories whose filesystem's free space is reported, by the setting that names them. */
  disks?: Record<string, string>;
}

/**
 * The API process's metrics, in a registry of its own (several apps can live in one process, as
 * in the tests). Counters are this process's since it started; queue depth and job totals are
 * read from Redis and Postgres at scrape time, so one scrape of any API instance shows the
 * whole service.
 */
export class ApiMetrics {
  readonly registry = new Registry();
  private readonly requestDuration: Histogram<"method" | "route" | "status_code">;
  private readonly uploadBytes: Counter<"route" | "field">;
  private readonly jobsCreated: Counter<"kind">;

  constructor(sources: ApiMetricsSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requestDuration = new Histogram({
      name: "mixdown_http_request_duration_seconds",
      help: "HTTP requests by method, route pattern and status code: time from arrival to the end of the response",
      labelNames: ["method", "route", "status_code"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.uploadBytes = new Counter({
      name: "mixdown_upload_bytes_total",
      help: "Bytes of uploaded file parts received whole (within their size limit), by route pattern and form field",
      labelNames: ["route", "field"],
      registers,
    });
    this.jobsCreated = new Counter({
      name: "mixdown_jobs_created_total",
      help: "Jobs created by this API process, by kind (an Idempotency-Key replay creates none)",
      labelNames: ["kind"],
      registers,
    });
    // Set by the two gauges below while they collect; read by mixdown_metrics_source_up after them.
    const up = new Map<string, Promise<boolean>>();
    const attempt = (source: string, work: () => Promise<void>) => {
      const done = work().then(
        () => true,
        (error: unknown) => {
          sources.log.warn({ err: error, source }, "metrics source unavailable");
          return false;
        },
      );
      up.set(source, done);
      return done;
    };
    new Gauge({
      name: "mixdown_queue_jobs",
      help: "Entries in each BullMQ queue by state, read from Redis at scrape time",
      labelNames: ["queue", "state"],
      registers,
      async collect() {
        this.reset();
        await attempt("redis", async () => {
          const counts = await withTimeout(
            Promise.all(QUEUES.map((name) => sources.queues.queue(name).getJobCounts(...QUEUE_STATES))),
            "redis",
          );
          QUEUES.forEach((queue, i) => {
            for (const state of QUEUE_STATES) this.set({ queue, state }, counts[i]![state] ?? 0);
          });
        });
      },
    });
    new Gauge({
      name: "mixdown_jobs",
      help: "Jobs in Postgres by kind and status (all callers, all time), read at scrape time",
      labelNames: ["kind", "status"],
      registers,
      async collect() {
        this.reset();
        await attempt("postgres", async () => {
          const groups = await withTimeout(sources.counts.jobsByKindAndStatus(), "postgres");
          // Every kind/status pair is present (0 when there is none), so rate() and alerts see a series from the start.
          for (const kind of JOB_KINDS) for (const status of JOB_STATUSES) this.set({ kind, status }, 0);
          for (const g of groups) this.set({ kind: g.kind, status: g.status }, g.count);
        });
      },
    });
    const { stored, disks = {} } = sources;
    if (stored) {
      // Set by the first gauge's collect as the scrape starts; the other two wait for it.
      let counted: Promise<boolean> = Promise.resolve(false);
      new Gauge({
        name: "mixdown_stored_bytes",
        help: "Bytes in storage by area (uploads: inputs, outputs, voice-models) and kind, as last counted",
        labelNames: ["area", "kind"],
        registers,
        async collect() {
          counted = attempt("storage", async () => {
            // A long count goes on after this scrape, which reports the last one finished.
            await Promise.race([
              stored.refreshIfStale(),
              new Promise((resolve) => setTimeout(resolve, SOURCE_TIMEOUT_MS).unref()),
            ]);
            if (stored.error) throw stored.error;
          });
          await counted;
          this.reset();
          for (const g of stored.last?.groups ?? []) this.set({ area: g.area, kind: g.kind }, g.bytes);
        },
      });
      new Gauge({
        name: "mixdown_stored_objects",
        help: "Objects in storage by area (uploads: inputs, outputs, voice-models) and kind, as last counted",
        labelNames: ["area", "kind"],
        registers,
        async collect() {
          await counted;
          this.reset();
          for (const g of stored.last?.groups ?? []) this.set({ area: g.area, kind: g.kind }, g.objects);
        },
      });
      new Gauge({
        name: "mixdown_stored_count_timestamp_seconds",
        help: "When the figures of mixdown_stored_bytes were counted (a count lists the whole bucket or STORAGE_LOCAL_DIR, at most every 5 minutes, on a scrape)",
        registers,
        async collect() {
          await counted;
          if (stored.last) this.set(stored.last.at / 1000);
        },
      });
    }
    new Gauge({
      name: "mixdown_disk_free_bytes",
      help: "Free bytes on the filesystem of a directory the process writes, by the setting naming it (TMP_DIR: uploads in flight; STORAGE_LOCAL_DIR: stored files on local storage)",
      labelNames: ["dir"],
      registers,
      async collect() {
        for (const [dir, path] of Object.entries(disks)) this.set({ dir }, await diskFreeBytes(path).catch(() => Number.NaN));
      },
    });
    // Registered after the gauges it reports on: a scrape starts the collects in registration
    // order, so this one finds the current scrape's attempts in `up`.
    new Gauge({
      name: "mixdown_metrics_source_up",
      help: "1 when this scrape could read the source (redis: queue depth, postgres: job totals, storage: the last count of stored bytes), else 0",
      labelNames: ["source"],
      registers,
      async collect() {
        for (const [source, done] of up) this.set({ source }, (await done) ? 1 : 0);
      },
    });
  }

  observeRequest(method: string, route: string, statusCode: number, seconds: number): void {
    this.requestDuration.observe({ method, route, status_code: String(statusCode) }, seconds);
  }

  countUpload(route: string, field: string, bytes: number): void {
    this.uploadBytes.inc({ route, field }, bytes);
  }

  countCreated(kind: string): void {
    this.jobsCreated.inc({ kind });
  }
}
