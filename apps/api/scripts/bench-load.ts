/**
 * Load bench: many callers at once against a whole running service, then the queue drains.
 *
 *   pnpm bench:load [--uploaders 50] [--pollers 200] [--seconds 120] [--audio-seconds 4]
 *                   [--kinds vocal-separations,stem-splits] [--poll-interval-ms 1000]
 *                   [--drain-timeout 1800] [--request-timeout-ms 60000]
 *                   [--keep] [--url http://127.0.0.1:PORT --key mxd_... [--home DIR]]
 *                   [--retention-minutes N] [--sample-seconds S]
 *
 * Without `--url` it starts `mixdown up` itself (its own temporary state dir, a free port, bound
 * to 127.0.0.1), reads the key `up` prints, and stops it at the end (SIGINT to its process group,
 * as a terminal's Ctrl-C). With `--url --key` it drives a running service on this machine; `--home`
 * (default: MIXDOWN_HOME or the checkout's `.mixdown`, when its `stack.json` serves that port) is
 * that `up`'s state dir, from which the API's pid (`run/api.pid`, for its memory) and the Redis
 * URL (`stack.json`, for the duplicate check) are read; without it those two are not measured.
 *
 * Clients, all over HTTP to 127.0.0.1:
 * - an uploader creates a job from the same short file (made once with ffmpeg), alternating the
 *   `--kinds` with the server's default models, then polls it every `--poll-interval-ms` until it
 *   ends, then creates the next: each keeps one job in flight, so the queue holds at most N and the
 *   drain is bounded;
 * - a poller follows one uploader (poller i follows uploader i mod N): every interval it GETs that
 *   uploader's current job by id and a list page (the 10 newest of a kind), as a dashboard would.
 * After `--seconds` the clients stop; then every job seen is polled until it ended (or the drain
 * timeout). The census lists every job of the caller newer than the run's start, which finds jobs
 * created without the client seeing the answer (a create that timed out) and jobs missing.
 *
 * A soak (issue 53): `--retention-minutes N` starts `up` with RETENTION_INPUT_MINUTES and
 * RETENTION_OUTPUT_MINUTES at N (swept every 30 s), and `--sample-seconds S` samples every S seconds
 * the API's and the worker's RSS, the bytes in `up`'s storage folder and PostgreSQL's database size;
 * the report adds the samples, each RSS's slope over the load's second half (MB per hour, least
 * squares: a leak shows as a steady slope) and the database's growth per 1,000 jobs. E.g.
 *   pnpm bench:load --uploaders 2 --pollers 4 --seconds 1800 --audio-seconds 3 --retention-minutes 3 --sample-seconds 60
 *
 * Findings that fail the run (exit 1): any 5xx or request without an answer (timeout, reset),
 * any lost job (created but never ended, or missing from the API), any duplicated one: its BullMQ
 * entry was taken up more than once (`attemptsStarted` > 1 or `stalledCounter` > 0) and the last
 * delivery ran the work (a retry after a transient error counts too). A delivery that found the
 * row already ended (the runner's "nothing-to-do": an earlier one finished it after losing its
 * lock) ran nothing; it is reported as redelivered, with the worker's log lines on the job, and
 * does not fail the run.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs, promisify } from "node:util";
import { freePort } from "@mixdown/devstack";
import { bullJobId, createQueues } from "@mixdown/queue";

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

const { values: args } = parseArgs({
  options: {
    uploaders: { type: "string", default: "50" },
    pollers: { type: "string", default: "200" },
    seconds: { type: "string", default: "120" },
    "audio-seconds": { type: "string", default: "4" },
    kinds: { type: "string", default: "vocal-separations,stem-splits" },
    "poll-interval-ms": { type: "string", default: "1000" },
    "drain-timeout": { type: "string", default: "1800" },
    "request-timeout-ms": { type: "string", default: "60000" },
    url: { type: "string" },
    key: { type: "string" },
    home: { type: "string" },
    /** Keep the state dir of the `up` this run started (its logs, database, outputs) for a look. */
    keep: { type: "boolean", default: false },
    /** Soak: the `up` this run starts keeps inputs and outputs this many minutes (0: its defaults). */
    "retention-minutes": { type: "string", default: "0" },
    /** Soak: sample memory, stored bytes and the database's size this often (0: not at all). */
    "sample-seconds": { type: "string", default: "0" },
  },
});
const uploaders = Number(args.uploaders);
const pollers = Number(args.pollers);
const seconds = Number(args.seconds);
const audioSeconds = Number(args["audio-seconds"]);
const kinds = args.kinds.split(",").filter(Boolean);
const pollIntervalMs = Number(args["poll-interval-ms"]);
const drainTimeoutMs = Number(args["drain-timeout"]) * 1000;
const requestTimeoutMs = Number(args["request-timeout-ms"]);
const retentionMinutes = Number(args["retention-minutes"]);
const sampleSeconds = Number(args["sample-seconds"]);
for (const [name, value] of Object.entries({
  uploaders,
  pollers,
  seconds,
  audioSeconds,
  pollIntervalMs,
  drainTimeoutMs,
  retentionMinutes,
  sampleSeconds,
})) {
  if (!Number.isFinite(value) || value < 0) throw new Error(`--${name}: not a number >= 0`);
}
if (uploaders < 1) throw new Error("--uploaders: at least 1");
if (kinds.some((k) => k !== "vocal-separations" && k !== "stem-splits")) {
  throw new Error("--kinds: vocal-separations and/or stem-splits");
}
if (Boolean(args.url) !== Boolean(args.key)) throw new Error("--url and --key go together");

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ENDED = new Set(["success", "error", "cancelled"]);

/** One `mixdown up` started for the run, in its own process group. */
interface OwnUp {
  child: ChildProcess;
  home: string;
  output: () => string;
  stop: (keep: boolean) => Promise<void>;
}

async function startUp(): Promise<OwnUp & { baseUrl: string; key: string }> {
  const home = await mkdtemp(path.join(os.tmpdir(), "mixdown-bench-load-"));
  // mkdtemp makes it private; PostgreSQL runs as the postgres user when this runs as root.
  await chmod(home, 0o755);
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "apps/cli/src/main.ts", "up"], {
    cwd: repoRoot,
    env: {
      ...process.env,
      DATABASE_URL: "",
      MIXDOWN_HOME: home,
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      ...(retentionMinutes > 0
        ? {
            RETENTION_INPUT_MINUTES: String(retentionMinutes),
            RETENTION_OUTPUT_MINUTES: String(retentionMinutes),
            RETENTION_SWEEP_INTERVAL_SECONDS: "30",
          }
        : {}),
    },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout!.on("data", (c) => (output += c));
  child.stderr!.on("data", (c) => (output += c));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async (keep: boolean) => {
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(-child.pid!, "SIGINT");
      const stopped = await Promise.race([exited.then(() => true), sleep(60_000).then(() => false)]);
      if (!stopped) {
        console.error("up did not stop within 60 s of SIGINT: killing its process group");
        process.kill(-child.pid!, "SIGKILL");
        await exited;
      }
    }
    if (keep) console.log(`Kept up's state dir: ${home}`);
    else await rm(home, { recursive: true, force: true });
  };
  const deadline = Date.now() + 300_000;
  for (;;) {
    const key = /A fresh API key[^\n]*\n(mxd_\S+)\n/.exec(output)?.[1];
    if (key) return { child, home, output: () => output, stop, baseUrl: `http://127.0.0.1:${port}`, key };
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      await stop(false);
      throw new Error(`up did not print its key (exited: ${child.exitCode ?? child.signalCode ?? "no"}):\n${output}`);
    }
    await sleep(200);
  }
}

/** Latencies and status counts of one kind of request. */
class RequestStats {
  readonly latencies: number[] = [];
  readonly statuses = new Map<string, number>();
  readonly errorSamples = new Map<string, string>();

  record(status: string, ms: number, detail?: string): void {
    this.latencies.push(ms);
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
    if (detail && !this.errorSamples.has(status)) this.errorSamples.set(status, detail.slice(0, 300));
  }
  get count(): number {
    return this.latencies.length;
  }
  /** 5xx answers and requests that got none. */
  get failures(): number {
    let n = 0;
    for (const [status, count] of this.statuses) if (status.startsWith("5") || status === "no answer") n += count;
    return n;
  }
  percentile(q: number): number {
    const sorted = [...this.latencies].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  }
  describeStatuses(): string {
    return [...this.statuses.entries()]
      .sort()
      .map(([s, n]) => `${s}: ${n}`)
      .join(", ");
  }
}

interface JobRecord {
  id: number;
  status: string;
  jobStartTime: string;
  jobEndTime: string | null;
  createdAt: string;
  errorMessage: string | null;
}

interface TrackedJob {
  kind: string;
  id: number;
  /** Seen by a client as the answer of its create (false: found only by the census). */
  answered: boolean;
  last?: JobRecord;
}

function readPid(file: string): number | undefined {
  return existsSync(file) ? Number(readFileSync(file, "utf8").split("\n")[0]) : undefined;
}

/** Bytes of the files under `dir` (what a storage folder holds). */
async function bytesUnder(dir: string): Promise<number> {
  const { readdir, stat } = await import("node:fs/promises");
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += await bytesUnder(full);
    else total += (await stat(full).catch(() => ({ size: 0 }))).size;
  }
  return total;
}

/** Least-squares slope of `y` over `x`. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return sxy / sxx;
}

/** One soak sample: seconds into the load, RSS in MB, stored and database bytes, jobs ended so far. */
interface SoakSample {
  t: number;
  apiMb?: number;
  workerMb?: number;
  storedBytes?: number;
  databaseBytes?: number;
  ended: number;
}

async function procStatusKb(pid: number, field: "VmHWM" | "VmRSS"): Promise<number | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/status`, "utf8");
    return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)?.[1]);
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), "mixdown-bench-load-audio-"));
  let own: (OwnUp & { baseUrl: string; key: string }) | undefined;
  let exitCode = 0;
  try {
    const audio = path.join(scratch, "short.wav");
    // A few seconds of something a separation model has to work on: a chord over pink noise.
    await run("ffmpeg", [
      "-hide_banner",
      "-loglevel",
      "error",
      "-f",
      "lavfi",
      "-i",
      `aevalsrc=0.2*sin(2*PI*220*t)+0.15*sin(2*PI*277*t)+0.1*sin(2*PI*330*t)*sin(2*PI*2*t):s=44100:d=${audioSeconds}`,
      "-f",
      "lavfi",
      "-i",
      `anoisesrc=c=pink:a=0.05:r=44100:d=${audioSeconds}`,
      "-filter_complex",
      "amix=inputs=2:normalize=0",
      "-ac",
      "2",
      audio,
    ]);
    const audioBytes = await readFile(audio);

    let baseUrl: string;
    let key: string;
    let home: string | undefined;
    if (args.url) {
      baseUrl = args.url.replace(/\/+$/, "");
      key = args.key!;
      const url = new URL(baseUrl);
      if (url.hostname !== "127.0.0.1" && url.hostname !== "localhost") throw new Error("--url: only 127.0.0.1 (this machine)");
      const candidate = args.home ?? path.resolve(repoRoot, process.env.MIXDOWN_HOME ?? ".mixdown");
      try {
        const info = JSON.parse(readFileSync(path.join(candidate, "stack.json"), "utf8")) as { baseUrl: string };
        if (args.home || new URL(info.baseUrl).port === url.port) home = candidate;
      } catch {
        if (args.home) throw new Error(`--home ${args.home}: no stack.json (is up running there?)`);
      }
    } else {
      console.log("Starting mixdown up in a temporary state dir…");
      const t0 = performance.now();
      own = await startUp();
      console.log(`up is ready after ${((performance.now() - t0) / 1000).toFixed(1)} s: ${own.baseUrl}, state ${own.home}`);
      ({ baseUrl, key } = own);
      home = own.home;
    }
    const api = `${baseUrl}/api/kits/v1`;
    const auth = { authorization: `Bearer ${key}` };
    const apiPid = home ? readPid(path.join(home, "run", "api.pid")) : undefined;
    const workerPid = home ? readPid(path.join(home, "run", "worker.pid")) : undefined;
    const redisUrl = home
      ? (JSON.parse(readFileSync(path.join(home, "stack.json"), "utf8")) as { redisUrl: string }).redisUrl
      : undefined;

    const creates = new RequestStats();
    const gets = new RequestStats();
    const lists = new RequestStats();
    const jobs = new Map<number, TrackedJob>();

    /** One request with a timeout; its status ("no answer" when none came), latency and JSON body. */
    async function request(
      stats: RequestStats | undefined,
      url: string,
      init: RequestInit = {},
    ): Promise<{ status: number; body: unknown }> {
      const t = performance.now();
      try {
        const res = await fetch(url, {
          ...init,
          headers: { ...auth, ...init.headers },
          signal: AbortSignal.timeout(requestTimeoutMs),
        });
        const text = await res.text();
        stats?.record(String(res.status), performance.now() - t, res.status >= 500 ? `${res.status} ${text}` : undefined);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
        return { status: res.status, body };
      } catch (error) {
        stats?.record("no answer", performance.now() - t, `${url}: ${String(error)}`);
        return { status: 0, body: undefined };
      }
    }

    // Only jobs newer than these belong to the run (with --url the key may have older ones).
    const baseline = new Map<string, number>();
    for (const kind of kinds) {
      const res = await request(undefined, `${api}/${kind}?perPage=1&order=desc`);
      if (res.status !== 200) throw new Error(`GET /${kind} answered ${res.status}: ${JSON.stringify(res.body)}`);
      baseline.set(kind, (res.body as { data: JobRecord[] }).data[0]?.id ?? 0);
    }

    const rssStart = apiPid ? await procStatusKb(apiPid, "VmRSS") : undefined;
    const current: Array<{ kind: string; id: number } | undefined> = new Array(uploaders);
    const loadStart = Date.now();
    const loadEnd = loadStart + seconds * 1000;
    let rssMaxSampled = rssStart ?? 0;
    const sampler = (async () => {
      while (apiPid && Date.now() < loadEnd) {
        rssMaxSampled = Math.max(rssMaxSampled, (await procStatusKb(apiPid, "VmRSS")) ?? 0);
        await sleep(500);
      }
    })();
    const databaseUrl = home
      ? (JSON.parse(readFileSync(path.join(home, "stack.json"), "utf8")) as { databaseUrl?: string }).databaseUrl
      : undefined;
    const databaseBytes = async (): Promise<number | undefined> => {
      if (!databaseUrl) return undefined;
      const { default: pg } = await import("pg");
      const client = new pg.Client({ connectionString: databaseUrl });
      try {
        await client.connect();
        return Number((await client.query("SELECT pg_database_size(current_database()) AS size")).rows[0].size);
      } catch {
        return undefined;
      } finally {
        await client.end().catch(() => undefined);
      }
    };
    const soak: SoakSample[] = [];
    const takeSample = async () => {
      const kb = async (pid: number | undefined) => (pid ? ((await procStatusKb(pid, "VmRSS")) ?? 0) / 1024 : undefined);
      soak.push({
        t: (Date.now() - loadStart) / 1000,
        apiMb: await kb(apiPid),
        workerMb: await kb(workerPid),
        storedBytes: home ? await bytesUnder(path.join(home, "storage")) : undefined,
        databaseBytes: await databaseBytes(),
        ended: [...jobs.values()].filter((j) => j.last && ENDED.has(j.last.status)).length,
      });
    };
    const soakSampler = (async () => {
      if (sampleSeconds <= 0) return;
      while (Date.now() < loadEnd) {
        await takeSample();
        await sleep(Math.min(sampleSeconds * 1000, Math.max(0, loadEnd - Date.now())));
      }
      await takeSample();
    })();

    const uploader = async (i: number) => {
      await sleep(Math.random() * pollIntervalMs);
      for (let n = 0; Date.now() < loadEnd; n++) {
        const kind = kinds[(i + n) % kinds.length]!;
        const form = new FormData();
        form.append("inputFile", new Blob([audioBytes], { type: "audio/wav" }), "short.wav");
        const res = await request(creates, `${api}/${kind}`, { method: "POST", body: form });
        const job = res.body as JobRecord | undefined;
        if (res.status !== 200 || typeof job?.id !== "number") {
          await sleep(pollIntervalMs);
          continue;
        }
        jobs.set(job.id, { kind, id: job.id, answered: true, last: job });
        current[i] = { kind, id: job.id };
        while (Date.now() < loadEnd) {
          await sleep(pollIntervalMs);
          const polled = await request(gets, `${api}/${kind}/${job.id}`);
          if (polled.status === 200) {
            const record = polled.body as JobRecord;
            jobs.get(job.id)!.last = record;
            if (ENDED.has(record.status)) break;
          }
        }
      }
    };
    const poller = async (j: number) => {
      await sleep(Math.random() * pollIntervalMs);
      for (let n = 0; Date.now() < loadEnd; n++) {
        const followed = current[j % uploaders];
        if (followed) await request(gets, `${api}/${followed.kind}/${followed.id}`);
        await request(lists, `${api}/${kinds[(j + n) % kinds.length]}?perPage=10&order=desc`);
        await sleep(pollIntervalMs);
      }
    };
    console.log(
      `Load: ${uploaders} uploaders (${audioSeconds} s wav, ${(audioBytes.length / 1024).toFixed(0)} KB; ${kinds.join(", ")}), ${pollers} pollers every ${pollIntervalMs} ms, for ${seconds} s against ${baseUrl}…`,
    );
    await Promise.all([
      ...Array.from({ length: uploaders }, (_, i) => uploader(i)),
      ...Array.from({ length: pollers }, (_, j) => poller(j)),
    ]);
    const clientsStopped = Date.now();
    await sampler;
    await soakSampler;

    /** Every job of the caller newer than the baseline, by id (bounded pages). */
    const census = async (): Promise<Map<number, { kind: string; record: JobRecord }>> => {
      const found = new Map<number, { kind: string; record: JobRecord }>();
      for (const kind of kinds) {
        const since = baseline.get(kind)!;
        for (let page = 1; page <= Math.ceil(jobs.size / 100) + 50; page++) {
          const res = await request(undefined, `${api}/${kind}?perPage=100&order=desc&page=${page}`);
          if (res.status !== 200) throw new Error(`census: GET /${kind} answered ${res.status}: ${JSON.stringify(res.body)}`);
          const rows = (res.body as { data: JobRecord[] }).data;
          for (const row of rows) if (row.id > since) found.set(row.id, { kind, record: row });
          if (rows.length < 100 || rows.at(-1)!.id <= since) break;
        }
      }
      return found;
    };
    for (const [id, { kind, record }] of await census()) {
      if (!jobs.has(id)) jobs.set(id, { kind, id, answered: false, last: record });
    }

    console.log(`Load over after ${((clientsStopped - loadStart) / 1000).toFixed(1)} s; draining ${jobs.size} jobs…`);
    const drainDeadline = clientsStopped + drainTimeoutMs;
    let lastReport = Date.now();
    for (;;) {
      const open = [...jobs.values()].filter((j) => !j.last || !ENDED.has(j.last.status));
      if (open.length === 0 || Date.now() > drainDeadline) break;
      if (Date.now() - lastReport > 30_000) {
        console.log(`  ${open.length} jobs not ended yet (${((Date.now() - clientsStopped) / 1000).toFixed(0)} s)`);
        lastReport = Date.now();
      }
      for (let k = 0; k < open.length; k += 8) {
        await Promise.all(
          open.slice(k, k + 8).map(async (job) => {
            const res = await request(undefined, `${api}/${job.kind}/${job.id}`);
            if (res.status === 200) job.last = res.body as JobRecord;
          }),
        );
      }
      await sleep(2000);
    }
    const drainObserved = Date.now() - clientsStopped;

    const final = await census();
    const missing = [...jobs.values()].filter((j) => !final.has(j.id));
    const notEnded = [...jobs.values()].filter((j) => final.has(j.id) && !ENDED.has(final.get(j.id)!.record.status));
    const endStatuses = new Map<string, number>();
    const errorMessages = new Map<string, number>();
    let lastEnd = 0;
    const waits: number[] = [];
    const runs: number[] = [];
    for (const { record } of final.values()) {
      endStatuses.set(record.status, (endStatuses.get(record.status) ?? 0) + 1);
      if (record.errorMessage) errorMessages.set(record.errorMessage, (errorMessages.get(record.errorMessage) ?? 0) + 1);
      if (record.jobEndTime) {
        const end = Date.parse(record.jobEndTime);
        lastEnd = Math.max(lastEnd, end);
        waits.push(end - Date.parse(record.createdAt));
        runs.push(end - Date.parse(record.jobStartTime));
      }
    }
    const pct = (values: number[], q: number) =>
      [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))] ?? 0;

    // Duplicates: every job's BullMQ entry says how often a worker took it up. A later delivery
    // that found the row ended (the runner's "nothing-to-do") ran no work: a redelivery, not a
    // duplicate; one that did the work again after an earlier start is a duplicate.
    type Redelivery = { id: number; attemptsStarted: number; attemptsMade: number; stalled: number; outcome: string };
    let duplicated: Redelivery[] | undefined;
    const redelivered: Redelivery[] = [];
    let entriesMissing = 0;
    if (redisUrl) {
      const queues = createQueues({ connection: redisUrl, prefix: process.env.QUEUE_PREFIX ?? "mixdown", attempts: 1 });
      try {
        duplicated = [];
        for (const job of jobs.values()) {
          const entry = await queues.queue("separation").getJob(bullJobId("separation", job.id));
          if (!entry) {
            entriesMissing++;
            continue;
          }
          if (entry.attemptsStarted > 1 || entry.stalledCounter > 0) {
            const outcome = entry.returnvalue == null ? (entry.failedReason ?? "none") : String(entry.returnvalue);
            const seen = {
              id: job.id,
              attemptsStarted: entry.attemptsStarted,
              attemptsMade: entry.attemptsMade,
              stalled: entry.stalledCounter,
              outcome,
            };
            (outcome === "nothing-to-do" ? redelivered : duplicated).push(seen);
          }
        }
      } finally {
        await queues.close();
      }
    }

    const apiPidNow = home ? readPid(path.join(home, "run", "api.pid")) : undefined;
    const apiHwm = apiPid ? await procStatusKb(apiPid, "VmHWM") : undefined;
    const workerHwm = workerPid ? await procStatusKb(workerPid, "VmHWM") : undefined;
    const restarts = own ? (own.output().match(/^.*restarting in .*$/gm) ?? []) : [];

    const ms = (v: number) => `${v.toFixed(0)} ms`;
    const mb = (kb: number | undefined) => (kb === undefined ? "not measured" : `${(kb / 1024).toFixed(0)} MB`);
    const answered = [...jobs.values()].filter((j) => j.answered).length;
    const lost = missing.length + notEnded.length;
    const rev = await run("git", ["-C", repoRoot, "rev-parse", "--short", "HEAD"]).then(
      (r) => r.stdout.trim(),
      () => "?",
    );
    console.log(
      `\nMixdown load bench (${rev}), ${new Date().toISOString()}: ${os.cpus().length} CPUs, load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}, node ${process.version}`,
    );
    console.log(`  clients: ${uploaders} uploaders, ${pollers} pollers, ${seconds} s, poll interval ${pollIntervalMs} ms`);
    console.log(
      `  creates: ${creates.count} (${creates.describeStatuses() || "none"}), latency p50 ${ms(creates.percentile(0.5))}, p99 ${ms(creates.percentile(0.99))}`,
    );
    console.log(
      `  polls: ${gets.count + lists.count} (GET by id ${gets.count}: ${gets.describeStatuses()}; list ${lists.count}: ${lists.describeStatuses()}), ${((gets.count + lists.count) / seconds).toFixed(0)}/s`,
    );
    console.log(
      `  poll latency: by id p50 ${ms(gets.percentile(0.5))}, p99 ${ms(gets.percentile(0.99))}; list p50 ${ms(lists.percentile(0.5))}, p99 ${ms(lists.percentile(0.99))}`,
    );
    console.log(
      `  jobs: created ${jobs.size} (${answered} answered, ${jobs.size - answered} found only by the census), ended ${jobs.size - lost} (${[
        ...endStatuses.entries(),
      ]
        .map(([s, n]) => `${s} ${n}`)
        .join(", ")})`,
    );
    for (const [message, n] of errorMessages) console.log(`    error x${n}: ${message}`);
    console.log(
      `  job times: create->end p50 ${ms(pct(waits, 0.5))}, p99 ${ms(pct(waits, 0.99))}; start->end p50 ${ms(pct(runs, 0.5))}, p99 ${ms(pct(runs, 0.99))}`,
    );
    console.log(
      `  lost: ${lost} (never ended ${notEnded.length}${notEnded.length ? `: ids ${notEnded.map((j) => j.id).join(",")}` : ""}, missing ${missing.length}${missing.length ? `: ids ${missing.map((j) => j.id).join(",")}` : ""})`,
    );
    const describe = (list: Redelivery[]) =>
      list
        .map(
          (d) =>
            ` [job ${d.id}: taken up ${d.attemptsStarted}x, stalled ${d.stalled}x, ${d.attemptsMade} attempts made, last: ${d.outcome}]`,
        )
        .join("");
    console.log(
      duplicated
        ? `  duplicated (the work ran again): ${duplicated.length}${describe(duplicated)}${entriesMissing ? ` (${entriesMissing} without a BullMQ entry: not checked)` : ""}`
        : "  duplicated: not checked (no Redis: give --home of the running up)",
    );
    if (duplicated) {
      console.log(
        `  redelivered (taken up again, found the job ended, ran nothing): ${redelivered.length}${describe(redelivered)}`,
      );
    }
    console.log(
      `  API peak RSS (VmHWM, pid ${apiPid ?? "?"}): ${mb(apiHwm)}; RSS at start of load ${mb(rssStart)}, highest sampled during load ${mb(rssMaxSampled || undefined)}${apiPidNow !== apiPid ? `; the API was restarted (pid ${apiPid} -> ${apiPidNow})` : ""}`,
    );
    console.log(`  worker peak RSS (VmHWM): ${mb(workerHwm)}`);
    console.log(
      `  drain: ${lastEnd ? `${((lastEnd - clientsStopped) / 1000).toFixed(1)} s from the clients' stop to the last job's end` : "no job ended"} (observed ${(drainObserved / 1000).toFixed(1)} s)`,
    );
    if ((duplicated?.length || redelivered.length) && home) {
      // What the worker said about them (it logs at warn under this bench: failed attempts, lost locks).
      const workerLog = path.join(home, "logs", "worker.log");
      const lines = existsSync(workerLog) ? readFileSync(workerLog, "utf8").split("\n") : [];
      for (const d of [...duplicated!, ...redelivered]) {
        const about = new RegExp(`separation-${d.id}\\b|"rowId":${d.id}\\b`);
        // The same line repeats (a lock renewal fails every few seconds): each message once, with its count and times.
        const said = new Map<string, { count: number; first: string; last: string }>();
        for (const line of lines.filter((l) => about.test(l))) {
          let text = line.slice(0, 300);
          let time = "?";
          try {
            const entry = JSON.parse(line) as { msg?: string; err?: string; time?: number };
            text = `${entry.msg}${entry.err ? `: ${entry.err}` : ""}`;
            if (entry.time) time = new Date(entry.time).toISOString();
          } catch {
            // Not a JSON log line: shown as it is.
          }
          const seen = said.get(text) ?? { count: 0, first: time, last: time };
          said.set(text, { ...seen, count: seen.count + 1, last: time });
        }
        const shown = [...said].map(([text, n]) => `    ${n.count}x ${text} (${n.first} .. ${n.last})`);
        console.log(`  worker log on job ${d.id}: ${shown.length ? `\n${shown.join("\n")}` : "nothing"}`);
      }
    }
    if (soak.length > 0) {
      const mbOf = (bytes: number | undefined) => (bytes === undefined ? "?" : (bytes / 1e6).toFixed(1));
      console.log(`  soak samples (every ${sampleSeconds} s; retention ${retentionMinutes || "default"} min):`);
      console.log("    t s | API RSS MB | worker RSS MB | stored MB | database MB | jobs ended");
      for (const s of soak)
        console.log(
          `    ${s.t.toFixed(0).padStart(5)} | ${s.apiMb?.toFixed(0) ?? "?"} | ${s.workerMb?.toFixed(0) ?? "?"} | ${mbOf(s.storedBytes)} | ${mbOf(s.databaseBytes)} | ${s.ended}`,
        );
      const secondHalf = soak.filter((s) => s.t >= seconds / 2);
      const perHour = (pick: (s: SoakSample) => number | undefined) =>
        (
          slope(secondHalf.flatMap((s) => (pick(s) === undefined ? [] : [[s.t / 3600, pick(s)!] as [number, number]]))) || 0
        ).toFixed(1);
      console.log(
        `  RSS slope over the second half: API ${perHour((s) => s.apiMb)} MB/h, worker ${perHour((s) => s.workerMb)} MB/h`,
      );
      const stored = soak.flatMap((s) => (s.storedBytes === undefined ? [] : [s.storedBytes]));
      if (stored.length) console.log(`  stored: at most ${mbOf(Math.max(...stored))} MB, at the end ${mbOf(stored.at(-1))} MB`);
      const [first, last] = [soak[0]!, soak.at(-1)!];
      if (first.databaseBytes !== undefined && last.databaseBytes !== undefined && last.ended > first.ended)
        console.log(
          `  database: ${mbOf(first.databaseBytes)} -> ${mbOf(last.databaseBytes)} MB, ${((((last.databaseBytes - first.databaseBytes) / (last.ended - first.ended)) * 1000) / 1e6).toFixed(2)} MB per 1,000 jobs`,
        );
    }
    if (restarts.length) console.log(`  up restarted children:\n${restarts.map((l) => `    ${l}`).join("\n")}`);
    for (const stats of [creates, gets, lists]) {
      for (const [status, sample] of stats.errorSamples) console.log(`  first ${status}: ${sample}`);
    }

    const failures = creates.failures + gets.failures + lists.failures;
    const problems = [
      failures && `${failures} requests answered 5xx or not at all`,
      lost && `${lost} jobs lost`,
      duplicated?.length && `${duplicated.length} jobs duplicated`,
      apiPidNow !== apiPid && "the API restarted",
    ].filter(Boolean);
    if (problems.length) {
      console.log(`\nFAILED: ${problems.join("; ")}`);
      exitCode = 1;
    } else {
      console.log("\nOK: no 5xx, no lost or duplicated job");
    }
  } finally {
    if (own) {
      console.log("Stopping up…");
      await own.stop(args.keep);
    }
    await rm(scratch, { recursive: true, force: true });
  }
  process.exit(exitCode);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
