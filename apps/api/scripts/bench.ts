/**
 * API figures: requests/s of a list call and of small creates, and the API's RSS while it takes a
 * ~100 MB upload. Starts a throwaway stack (embedded Postgres, redis-server, s3rver or local disk),
 * spawns the API as its own process (`node --import tsx apps/api/src/main.ts`), drives it over
 * HTTP on 127.0.0.1 with a bounded number of concurrent requests, samples /proc/<pid>/status
 * VmRSS, prints a table and stops everything.
 *
 *   pnpm bench:api [--storage s3|local] [--seconds 8] [--concurrency 16] [--upload-mb 95] [--reads-only]
 *                  [--reads health,running,one,list] [--checkout DIR]
 *
 * `--checkout DIR` drives the API of another checkout of the project (its own node_modules) on
 * the same stack and rows, to measure a change before and after in one run. Reads are driven by
 * autocannon; besides req/s and latency the table gives the API process's CPU time per request,
 * which a loaded machine changes far less than the rates.
 */
import { execFile, spawn } from "node:child_process";
import { createReadStream } from "node:fs";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { parseArgs, promisify } from "node:util";
import { ApiKeyRepository, createPrismaClient, SeparationJobRepository, VoiceModelRepository } from "@mixdown/db";
import { freePort, startTestStack } from "@mixdown/devstack";
import autocannon from "autocannon";

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

const { values: args } = parseArgs({
  options: {
    storage: { type: "string", default: "s3" },
    seconds: { type: "string", default: "8" },
    concurrency: { type: "string", default: "16" },
    "upload-mb": { type: "string", default: "95" },
    "node-flag": { type: "string", multiple: true, default: [] },
    "reads-only": { type: "boolean", default: false },
    /** Which reads to drive (profiling one at a time): health, one, list, running. */
    reads: { type: "string", default: "health,one,running,list" },
    /** Another checkout whose API to drive (the same stack and data): before/after in one run. */
    checkout: { type: "string" },
  },
});
const storage = args.storage === "local" ? "local" : "s3";
const seconds = Number(args.seconds);
const concurrency = Number(args.concurrency);
const uploadMb = Number(args["upload-mb"]);

/** utime + stime of a process, in ms (clock ticks of 10 ms). */
async function cpuMs(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function readRssKb(pid: number): Promise<number> {
  return readFile(`/proc/${pid}/status`, "utf8").then((s) => Number(/VmRSS:\s+(\d+)/.exec(s)?.[1] ?? 0));
}

interface LoadResult {
  /** The API process's CPU time per request (ms), when measured: robust to a loaded machine. */
  cpuPerRequest?: number;
  requests: number;
  errors: number;
  perSecond: number;
  p50: number;
  p99: number;
}

/** `concurrency` loops issuing requests back to back for `durationMs`. */
async function load(durationMs: number, request: () => Promise<Response>, ok: (status: number) => boolean): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const end = Date.now() + durationMs;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        const t = performance.now();
        try {
          const res = await request();
          await res.arrayBuffer();
          if (!ok(res.status)) errors++;
        } catch {
          errors++;
        }
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { requests: latencies.length, errors, perSecond: latencies.length / elapsed, p50: at(0.5), p99: at(0.99) };
}

/** A multipart body streamed from disk: the upload is never held in the client's memory either. */
function streamingForm(fields: Record<string, string>, fileField: string, filePath: string, size: number) {
  const boundary = `----mixdownbench${Date.now()}`;
  const head = Buffer.from(
    Object.entries(fields)
      .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="${fileField}"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* body() {
    yield head;
    for await (const chunk of createReadStream(filePath, { highWaterMark: 256 * 1024 })) yield chunk as Buffer;
    yield tail;
  }
  return {
    body: Readable.toWeb(Readable.from(body())) as ReadableStream,
    headers: {
      "content-type": `multipart/form-data; boundary=${boundary}`,
      "content-length": String(head.length + size + tail.length),
    },
  };
}

async function main(): Promise<void> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), "mixdown-bench-"));
  const stack = await startTestStack({ storage });
  let api: ReturnType<typeof spawn> | undefined;
  try {
    const prisma = createPrismaClient(stack.env.DATABASE_URL!);
    const { key, callerId } = await new ApiKeyRepository(prisma).createApiKey({ name: "bench" });
    const model = await new VoiceModelRepository(prisma).create({ title: "Bench A", architecture: "native", sampleRate: 40000 });
    const model2 = await new VoiceModelRepository(prisma).create({ title: "Bench B", architecture: "native", sampleRate: 40000 });
    const separations = new SeparationJobRepository(prisma);
    // What a client polls: succeeded jobs with every output a vocal separation publishes (11 signed URLs each).
    let polledId = 0;
    for (let i = 0; i < 50; i++) {
      const row = await separations.create({
        callerId,
        kind: "vocal_separation",
        inputKey: `uploads/b/${i}.wav`,
        inputFormat: "wav",
      });
      const out = (name: string, ext: string) => `outputs/vocal-separation/${row.id}/${name}.${ext}`;
      const stems = (ext: string) =>
        ["vocals", "lead_vocals", "backing_vocals", "instrumental"].map((s) => ({ instrument: s, key: out(s, ext) }));
      await prisma.separationJob.update({
        where: { id: row.id },
        data: {
          status: "success",
          progress: 100,
          jobEndTime: new Date(),
          models: ["vocals"],
          vocalKey: out("vocals", "wav"),
          lossyVocalKey: out("vocals", "mp3"),
          backingKey: out("instrumental", "wav"),
          stems: stems("wav"),
          lossyStems: stems("mp3"),
        },
      });
      polledId = row.id;
    }
    const { id: runningId } = await separations.create({
      callerId,
      kind: "vocal_separation",
      inputKey: "uploads/b/running.wav",
      inputFormat: "wav",
    });

    const smallWav = path.join(scratch, "small.wav");
    const bigWav = path.join(scratch, "big.wav");
    const bigSeconds = Math.floor((uploadMb * 1024 * 1024 - 100) / (44100 * 2 * 2));
    await run("ffmpeg", [
      "-hide_banner",
      "-loglevel",
      "error",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:sample_rate=44100:duration=0.25",
      "-ac",
      "2",
      smallWav,
    ]);
    await run("ffmpeg", [
      "-hide_banner",
      "-loglevel",
      "error",
      "-f",
      "lavfi",
      "-i",
      `sine=frequency=220:sample_rate=44100:duration=${bigSeconds}`,
      "-ac",
      "2",
      bigWav,
    ]);
    const bigSize = (await stat(bigWav)).size;
    const small = await readFile(smallWav);

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const apiRoot = args.checkout ? path.resolve(args.checkout) : repoRoot;
    api = spawn(process.execPath, [...(args["node-flag"] ?? []), "--import", "tsx", "apps/api/src/main.ts"], {
      cwd: apiRoot,
      env: {
        ...process.env,
        ...stack.env,
        PORT: String(port),
        PUBLIC_BASE_URL: base,
        LOG_LEVEL: "warn",
        NODE_ENV: "production",
        RATE_LIMIT_READS_PER_MINUTE: "0",
        RATE_LIMIT_WRITES_PER_MINUTE: "0",
        RECONCILE_INTERVAL_SECONDS: "0",
      },
      stdio: ["ignore", "inherit", "inherit"],
    });
    for (let i = 0; ; i++) {
      if (i > 300) throw new Error("the API did not come up");
      const up = await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const pid = api.pid!;
    const auth = { authorization: `Bearer ${key}` };
    const listUrl = `${base}/api/kits/v1/vocal-separations?perPage=10`;
    const oneUrl = `${base}/api/kits/v1/vocal-separations/${polledId}`;
    const runningUrl = `${base}/api/kits/v1/vocal-separations/${runningId}`;
    // Reads are driven by autocannon (fastify's own load generator): fetch's client costs more CPU
    // per request than the route does, and it shares the machine with the API.
    const readLoad = async (url: string): Promise<LoadResult> => {
      const cpuBefore = await cpuMs(pid);
      const r = await autocannon({ url, connections: concurrency, duration: seconds, headers: auth });
      return {
        cpuPerRequest: ((await cpuMs(pid)) - cpuBefore) / r.requests.total,
        requests: r.requests.total,
        errors: r.errors + r.timeouts + r.non2xx,
        perSecond: r.requests.total / (r.duration || seconds),
        p50: r.latency.p50,
        p99: r.latency.p99,
      };
    };
    const smallCreate = () => {
      const form = new FormData();
      form.append("inputFile", new Blob([small], { type: "audio/wav" }), "small.wav");
      return fetch(`${base}/api/kits/v1/vocal-separations`, { method: "POST", headers: auth, body: form });
    };
    const conversionCreate = (file: string, size: number) => {
      const form = streamingForm({ voiceModelId: String(model.id) }, "soundFile", file, size);
      return fetch(`${base}/api/kits/v1/voice-conversions`, {
        method: "POST",
        headers: { ...auth, ...form.headers },
        body: form.body,
        duplex: "half",
      } as RequestInit);
    };

    // Warm-up: every code path once, so the baseline includes loaded modules and pools.
    for (let i = 0; i < 20; i++) await (await fetch(listUrl, { headers: auth })).arrayBuffer();
    for (let i = 0; i < 20; i++) await (await fetch(oneUrl, { headers: auth })).arrayBuffer();
    for (let i = 0; i < 20; i++) await (await fetch(runningUrl, { headers: auth })).arrayBuffer();
    const readsOnly = args["reads-only"];
    if (!readsOnly) {
      for (let i = 0; i < 3; i++) await (await smallCreate()).arrayBuffer();
      for (let i = 0; i < 3; i++) await (await conversionCreate(smallWav, small.length)).arrayBuffer();
    }
    await new Promise((r) => setTimeout(r, 500));

    // RSS during one big upload (the route limit is 100 MB; the file is just under it).
    let upload: { baseline: number; peak: number; seconds: number } | undefined;
    if (!readsOnly) {
      const baseline = await readRssKb(pid);
      let peak = baseline;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          peak = Math.max(peak, await readRssKb(pid));
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      const t0 = performance.now();
      const uploadRes = await conversionCreate(bigWav, bigSize);
      const uploadBody = await uploadRes.text();
      upload = { baseline, peak, seconds: (performance.now() - t0) / 1000 };
      sampling = false;
      await sampler;
      if (uploadRes.status !== 201) throw new Error(`big upload answered ${uploadRes.status}: ${uploadBody}`);
    }

    const readTargets = [
      { name: "health", label: "GET /healthz (no auth, no database: the HTTP stack's ceiling)", url: `${base}/healthz` },
      { name: "running", label: "GET /vocal-separations/:id (running, what a poller sees while it waits)", url: runningUrl },
      { name: "one", label: "GET /vocal-separations/:id (succeeded, 11 signed URLs)", url: oneUrl },
      { name: "list", label: "GET /vocal-separations (list, 10 succeeded per page)", url: listUrl },
    ];
    const wanted = new Set(args.reads.split(","));
    const reads: Array<{ label: string; result: LoadResult }> = [];
    for (const target of readTargets) {
      if (wanted.has(target.name)) reads.push({ label: target.label, result: await readLoad(target.url) });
    }
    const writes = readsOnly
      ? undefined
      : {
          creates: await load(seconds * 1000, smallCreate, (s) => s === 200),
          blends: await load(
            seconds * 1000,
            () =>
              fetch(`${base}/api/kits/v1/voice-blender`, {
                method: "POST",
                headers: { ...auth, "content-type": "application/json" },
                body: JSON.stringify({ modelId1: model.id, modelId2: model2.id, alpha: 0.5 }),
              }),
            (s) => s === 201,
          ),
        };
    await prisma.$disconnect();

    const mb = (kb: number) => (kb / 1024).toFixed(1);
    const row = (name: string, r: LoadResult) =>
      `| ${name} | ${r.perSecond.toFixed(0)} req/s | p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms${r.cpuPerRequest === undefined ? "" : `, API CPU ${(r.cpuPerRequest * 1000).toFixed(0)} µs/request`} | ${r.requests} requests, ${r.errors} errors |`;
    console.log(
      `\nMixdown API bench: the API of ${apiRoot} (${await run("git", ["-C", apiRoot, "rev-parse", "--short", "HEAD"]).then((r) => r.stdout.trim())}), storage=${storage}, ${concurrency} concurrent requests for ${seconds} s each, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}, node ${process.version}\n`,
    );
    console.log("| measurement | result | latency / detail | count |");
    console.log("| --- | --- | --- | --- |");
    for (const read of reads) console.log(row(read.label, read.result));
    if (writes) {
      console.log(row("POST /vocal-separations (0.25 s wav, multipart)", writes.creates));
      console.log(row("POST /voice-blender (JSON create)", writes.blends));
    }
    if (upload) {
      console.log(
        `| API RSS during a ${(bigSize / 1024 / 1024).toFixed(0)} MB upload (POST /voice-conversions) | +${mb(upload.peak - upload.baseline)} MB | baseline ${mb(upload.baseline)} MB, peak ${mb(upload.peak)} MB | upload took ${upload.seconds.toFixed(1)} s |`,
      );
    }
  } finally {
    if (api && api.exitCode === null) {
      api.kill("SIGTERM");
      await new Promise((r) => api!.once("exit", r));
    }
    await stack.stop();
    await rm(scratch, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
