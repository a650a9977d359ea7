import assert from "node:assert/strict";
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { join } from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { buildApp, type App } from "@mixdown/api";
import { probeWavHeader } from "@mixdown/audio";
import { loadConfig } from "@mixdown/config";
import { ApiKeyRepository, createPrismaClient, type PrismaClient } from "@mixdown/db";
import type { Job, Queue } from "bullmq";
import yauzl from "yauzl";
import { startTestStack, stopChild, testFilesDir, type TestStack } from "@mixdown/devstack";
import { modelProcessEnv } from "@mixdown/separation/allocator";

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

/** A whole Mixdown: real services, the API listening on a port, a worker process, a caller key. */
export interface Deployment {
  stack: TestStack;
  api: App;
  baseUrl: string;
  key: string;
  prisma: PrismaClient;
  env: Record<string, string>;
  worker: ChildProcess;
  /** Starts another worker process; "pipe" exposes its JSON log lines on `stdout`. */
  startWorker(output?: "inherit" | "pipe"): ChildProcess;
  stop(): Promise<void>;
}

export async function startDeployment(
  extraEnv: Record<string, string> = {},
  options: { worker?: boolean; storage?: "s3" | "local" } = {},
): Promise<Deployment> {
  const stack = await startTestStack({ storage: options.storage ?? "s3", redisAppendOnly: true });
  const env: Record<string, string> = {
    ...stack.env,
    LOG_LEVEL: process.env.TEST_WORKER_LOG_LEVEL ?? "warn",
    RECONCILE_INTERVAL_SECONDS: "2",
    RECONCILE_GRACE_SECONDS: "5",
    WORKER_LOCK_DURATION_MS: "5000",
    WORKER_STALLED_INTERVAL_MS: "2000",
    JOB_ATTEMPTS: "8",
    ...extraEnv,
  };
  const api = await buildApp(loadConfig(env));
  await api.listen({ port: 0, host: "127.0.0.1" });
  const address = api.server.address();
  const baseUrl = typeof address === "object" && address ? `http://127.0.0.1:${address.port}` : "";
  const prisma = createPrismaClient(env.DATABASE_URL!);
  const { key } = await new ApiKeyRepository(prisma).createApiKey({ name: "e2e" });
  const workers: ChildProcess[] = [];
  const startWorker = (output: "inherit" | "pipe" = "inherit") => {
    // node itself, not the tsx wrapper: a signal must reach the worker, not a parent that outlives it.
    const child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "apps/worker/src/main.ts")], {
      cwd: repoRoot,
      // as `up` and the image start it (MODEL_ALLOCATOR)
      env: modelProcessEnv({ ...process.env, ...env }),
      stdio: ["ignore", output, "inherit"],
    });
    workers.push(child);
    return child;
  };
  const deployment: Deployment = {
    stack,
    api,
    baseUrl,
    key,
    prisma,
    env,
    worker: options.worker === false ? (undefined as unknown as ChildProcess) : startWorker(),
    startWorker,
    async stop() {
      await Promise.all(workers.filter((w) => w.exitCode === null && w.signalCode === null).map((w) => stopChild(w, "SIGTERM")));
      await api.close();
      await prisma.$disconnect();
      await stack.stop();
    },
  };
  return deployment;
}

export async function makeAudio(name: string, args: string[]): Promise<string> {
  const dir = await testFilesDir("e2e-");
  const path = join(dir, name);
  await run("ffmpeg", ["-v", "error", "-y", ...args, path]);
  return path;
}

/** A short "song": a spoken phrase (espeak-ng) over a chord and a beat, stereo 44.1 kHz. */
export async function makeSong(name: string, seconds: number, outputArgs: string[] = []): Promise<string> {
  const dir = await testFilesDir("e2e-");
  const voice = join(dir, "voice.wav");
  await run("espeak-ng", [
    "-v",
    "en+f3",
    "-s",
    "150",
    "-w",
    voice,
    "Mixdown separates the voice from the music behind it, every time.",
  ]);
  const path = join(dir, name);
  await run("ffmpeg", [
    "-v",
    "error",
    "-y",
    "-stream_loop",
    "-1",
    "-i",
    voice,
    "-f",
    "lavfi",
    "-i",
    `sine=f=110:d=${seconds}`,
    "-f",
    "lavfi",
    "-i",
    `sine=f=165:d=${seconds}`,
    "-f",
    "lavfi",
    "-i",
    `anoisesrc=d=${seconds}:c=pink:a=0.05`,
    "-filter_complex",
    `[0]aresample=44100,atrim=0:${seconds}[v];[1][2][3]amix=inputs=3:normalize=0,volume=0.3[b];[v][b]amix=inputs=2:normalize=0,pan=stereo|c0=c0|c1=c0[out]`,
    "-map",
    "[out]",
    "-ar",
    "44100",
    ...outputArgs,
    path,
  ]);
  return path;
}

/**
 * Rate, length and codec of an output: a plain WAV from its header (`probeWavHeader`, which the
 * audio package's tests hold to ffprobe's reading; an ffprobe run costs ~0.2 s of CPU), anything
 * else from ffprobe.
 */
export async function probe(
  path: string,
): Promise<{ sampleRate: number; samples: number | null; duration: number; codec: string }> {
  const wav = await probeWavHeader(path);
  if (wav) return { sampleRate: wav.sampleRate, samples: wav.frames, duration: wav.duration, codec: wav.codec };
  const { stdout } = await run("ffprobe", ["-v", "error", "-show_streams", "-show_format", "-of", "json", path]);
  const info = JSON.parse(stdout);
  const stream = info.streams.find((s: { codec_type: string }) => s.codec_type === "audio");
  return {
    sampleRate: Number(stream.sample_rate),
    samples:
      stream.duration_ts !== undefined && stream.time_base === `1/${stream.sample_rate}` ? Number(stream.duration_ts) : null,
    duration: Number(info.format.duration),
    codec: stream.codec_name,
  };
}

/** Decodes to float32 stereo at the file's own rate. */
export async function decodeFloat(path: string): Promise<Float32Array> {
  // A mono input is compared as the service treats it: the one channel on both sides, at full level.
  const { stdout: channels } = await run("ffprobe", [
    "-v",
    "error",
    "-select_streams",
    "a:0",
    "-show_entries",
    "stream=channels",
    "-of",
    "csv=p=0",
    path,
  ]);
  const layout = Number(channels.trim()) === 1 ? ["-af", "pan=stereo|c0=c0|c1=c0"] : ["-ac", "2"];
  const { stdout } = await run("ffmpeg", ["-v", "error", "-i", path, ...layout, "-f", "f32le", "-"], {
    encoding: "buffer",
    maxBuffer: 1 << 30,
  });
  const buf = stdout as unknown as Buffer;
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}

/**
 * 10·log10(Σreference² / Σ(reference − estimate)²), the noise floored at `noiseFloor`: over the
 * shorter of the two, or, with `sameLength`, once asserted that they are equally long.
 */
export function snrDb(
  reference: Float32Array,
  estimate: Float32Array,
  { sameLength = false, noiseFloor = 1e-20 }: { sameLength?: boolean; noiseFloor?: number } = {},
): number {
  if (sameLength) assert.equal(estimate.length, reference.length);
  const n = Math.min(reference.length, estimate.length);
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < n; i++) {
    signal += reference[i]! ** 2;
    noise += (reference[i]! - estimate[i]!) ** 2;
  }
  return 10 * Math.log10(signal / Math.max(noise, noiseFloor));
}

export async function upload(d: Deployment, path: string, route: string, part = "inputFile"): Promise<Response> {
  const form = new FormData();
  form.append(part, new Blob([await readFile(path)]), path.split("/").pop());
  return fetch(`${d.baseUrl}/api/kits/v1/${route}`, {
    method: "POST",
    body: form,
    headers: { authorization: `Bearer ${d.key}` },
  });
}

/** A multipart POST with the deployment's key: strings as fields, `{ path }` as file parts. */
export async function postForm(
  d: Deployment,
  route: string,
  parts: Record<string, string | { path: string }>,
): Promise<Response> {
  const form = new FormData();
  for (const [name, value] of Object.entries(parts)) {
    if (typeof value === "string") form.append(name, value);
    else form.append(name, new Blob([await readFile(value.path)]), value.path.split("/").pop());
  }
  return fetch(`${d.baseUrl}/api/kits/v1/${route}`, {
    method: "POST",
    body: form,
    headers: { authorization: `Bearer ${d.key}` },
  });
}

/** POSTs a JSON body to an API route with the deployment's key. */
export function postJson(d: Deployment, route: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${d.baseUrl}/api/kits/v1/${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${d.key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

export async function getJson(d: Deployment, route: string): Promise<any> {
  const res = await fetch(`${d.baseUrl}/api/kits/v1/${route}`, { headers: { authorization: `Bearer ${d.key}` } });
  if (!res.ok) throw new Error(`GET ${route}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** Resolves once `check` holds, polled every 200 ms; throws naming `what` after `timeoutMs`. */
export async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 240_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function waitForEnd(d: Deployment, route: string, timeoutMs = 180_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await getJson(d, route);
    if (job.status !== "running") return job;
    if (Date.now() > deadline) throw new Error(`${route} still running after ${timeoutMs} ms (progress ${job.progress})`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * The BullMQ entry `bullId` once its attempt has ended (completed or failed). A worker writes the
 * row's end before BullMQ records the attempt (`attemptsMade`, `finishedOn`), so a test that reads
 * the entry after seeing the row's end must wait for this first.
 */
export async function waitForQueueEntryEnd(queue: Queue, bullId: string, timeoutMs = 30_000): Promise<Job> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await queue.getJob(bullId);
    if (job?.finishedOn) return job;
    if (Date.now() > deadline)
      throw new Error(
        `${bullId}: BullMQ did not record the attempt's end within ${timeoutMs} ms (${job ? await job.getState() : "no entry"})`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function download(url: string): Promise<string> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  const dir = await testFilesDir("dl-");
  const name = new URL(url).pathname.split("/").pop()!;
  const path = join(dir, name);
  const { writeFile } = await import("node:fs/promises");
  await writeFile(path, Buffer.from(await res.arrayBuffer()));
  return path;
}

export { stopChild };

/** The JSON log lines a worker started with `startWorker("pipe")` writes, parsed, as they come. */
export function logLines(child: ChildProcess): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  let buffered = "";
  child.stdout!.on("data", (d: Buffer) => {
    buffered += d.toString();
    const parts = buffered.split("\n");
    buffered = parts.pop() ?? "";
    for (const part of parts) if (part.trim()) lines.push(JSON.parse(part) as Record<string, unknown>);
  });
  return lines;
}

/** A webhook delivery as a receiver saw it: its `Mixdown-Event` header and its JSON body. */
export interface ReceivedHook {
  event: string;
  body: { id: number; type: string; status: string };
}

/** A local webhook receiver that answers 200 and keeps what it was sent; `url` is where it listens. */
export async function startWebhookReceiver(path: string): Promise<{
  url: string;
  hooks: ReceivedHook[];
  waitFor(id: number, timeoutMs?: number): Promise<ReceivedHook | undefined>;
  close(): Promise<void>;
}> {
  const hooks: ReceivedHook[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      hooks.push({ event: String(req.headers["mixdown-event"]), body: JSON.parse(Buffer.concat(chunks).toString("utf8")) });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}${path}`,
    hooks,
    async waitFor(id, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!hooks.some((h) => h.body.id === id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      return hooks.find((h) => h.body.id === id);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The names of a zip file's entries, sorted. */
export function zipNames(path: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    yauzl.open(path, { lazyEntries: false, autoClose: true }, (error, zip) => {
      if (error) return reject(error);
      const names: string[] = [];
      zip.on("entry", (entry: yauzl.Entry) => names.push(entry.fileName));
      zip.on("end", () => resolve(names.sort()));
      zip.on("error", reject);
    });
  });
}
