import { createHash } from "node:crypto";
import { createWriteStream, openAsBlob } from "node:fs";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, join, relative, resolve } from "node:path";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { MultiBar, Presets, type SingleBar } from "cli-progress";
import { createKitsClient, formData, type components } from "@mixdown/kits-client";
import { UsageError } from "../database.ts";
import { collectInputs, InputProblem } from "../separate/inputs.ts";

type Batch = components["schemas"]["Batch"];
type BatchKind = Batch["kind"];
const KINDS: BatchKind[] = ["vocal-separation", "stem-split"];

const USAGE = `usage: mixdown batch [<file|dir>...] [--urls FILE] --server URL --key KEY [options]

Sends every file named, and the audio files of every folder named (searched
recursively; wav, mp3, flac or webm by their content, as the server decides an
upload's format), and every link listed in --urls, to a Mixdown server as
batches (POST /api/kits/v1/batches), follows them with a progress bar each, and
downloads each batch's zip of outputs (a folder per input) into --out once its
jobs have ended. The server downloads each link itself, before its job runs.

  --server URL        the server, e.g. http://127.0.0.1:8080 (or MIXDOWN_SERVER)
  --key KEY           an API key (or MIXDOWN_API_KEY)
  --kind KIND         vocal-separation (default) or stem-split
  --model NAME        the jobs' model (several, comma-separated: an ensemble)
  --ensemble ALG      how an ensemble combines its models
  --analyze           analyse the input and each stem (key, tempo, loudness)
  --out DIR           where the zips go (default: the current folder)
  --urls FILE         links to audio files, one per line (- reads them from stdin;
                      blank lines and lines starting with # are skipped)
  --per-batch N       files and links per batch (default 50)

Run again, the same command follows the batches it made instead of making new
ones (their ids are kept in DIR/.mixdown-batches/; a batch whose zip is in DIR
is done); Ctrl-C stops following, not the jobs. Exit status 1 when a file made
no job or a job did not succeed.`;

export interface BatchIo {
  stderr: { write(text: string): unknown; isTTY?: boolean };
  stdout: { write(text: string): unknown };
  /** Where `--urls -` reads its links. */
  stdin?: NodeJS.ReadableStream;
}

/** The links of a `--urls` list: one per line, blank lines and `#` comments skipped. */
export function linksOfList(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
}

/** A batch's input: a local file, or a link the server downloads. */
type BatchInput = { file: string } | { url: string };

/** A group of inputs and what identifies its create: the same files, links and options, the same key. */
async function idempotencyKey(server: string, fields: Record<string, string>, inputs: BatchInput[]): Promise<string> {
  const hash = createHash("sha256").update(JSON.stringify([server, fields]));
  for (const input of inputs) {
    if ("url" in input) {
      hash.update(`\0url\0${input.url}`);
      continue;
    }
    const info = await stat(input.file);
    hash.update(`\0${input.file}\0${info.size}\0${info.mtimeMs}`);
  }
  return `mixdown-batch-${hash.digest("hex").slice(0, 40)}`;
}

class ServerError extends Error {}

export async function batchCommand(
  argv: string[],
  env: Record<string, string | undefined>,
  io: BatchIo = process,
): Promise<number> {
  try {
    return await runBatch(argv, env, io);
  } catch (error) {
    if (error instanceof ServerError) io.stderr.write(`mixdown batch: ${error.message}\n`);
    else if (error instanceof TypeError && error.message === "fetch failed") {
      // The server could not be reached (undici's cause: ECONNREFUSED, ENOTFOUND, a reset, ...).
      const cause = error.cause as { code?: string; message?: string } | undefined;
      io.stderr.write(`mixdown batch: cannot reach the server: ${cause?.code ?? cause?.message ?? error.message}\n`);
    } else throw error;
    return 1;
  }
}

async function runBatch(argv: string[], env: Record<string, string | undefined>, io: BatchIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      server: { type: "string" },
      key: { type: "string" },
      kind: { type: "string", default: "vocal-separation" },
      model: { type: "string" },
      ensemble: { type: "string" },
      analyze: { type: "boolean", default: false },
      out: { type: "string", default: "." },
      urls: { type: "string" },
      "per-batch": { type: "string", default: "50" },
      "poll-ms": { type: "string", default: "1000" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const server = (values.server ?? env.MIXDOWN_SERVER ?? "").replace(/\/+$/, "");
  const apiKey = values.key ?? env.MIXDOWN_API_KEY;
  if (!server) throw new UsageError(`--server URL is required (or MIXDOWN_SERVER)\n\n${USAGE}`);
  if (!apiKey) throw new UsageError(`--key KEY is required (or MIXDOWN_API_KEY)\n\n${USAGE}`);
  const bearerKey: string = apiKey;
  if (positionals.length === 0 && values.urls === undefined)
    throw new UsageError(`name at least one file or folder, or --urls FILE\n\n${USAGE}`);
  const kind = values.kind as BatchKind;
  if (!KINDS.includes(kind)) throw new UsageError(`--kind must be one of ${KINDS.join(", ")}, got "${values.kind}"`);
  const perBatch = Number(values["per-batch"]);
  if (!Number.isInteger(perBatch) || perBatch < 1)
    throw new UsageError(`--per-batch must be a positive integer, got "${values["per-batch"]}"`);
  const pollMs = Number(values["poll-ms"]);
  const out = resolve(values.out);
  const stateDir = join(out, ".mixdown-batches");

  // The files as `separate` takes them: a folder's audio decided by content, as an upload's is.
  const { inputs, notAudio } =
    positionals.length > 0
      ? await collectInputs(positionals, out).catch((error: unknown) => {
          throw error instanceof InputProblem ? new UsageError(error.message) : error;
        })
      : { inputs: [], notAudio: [] };
  for (const skipped of notAudio) io.stderr.write(`skipped ${skipped.label}: ${skipped.what}\n`);
  const links = values.urls === undefined ? [] : linksOfList(await readLinks(values.urls, io));
  if (values.urls !== undefined && links.length === 0)
    throw new UsageError(`no link in ${values.urls === "-" ? "stdin" : values.urls}`);
  const files: BatchInput[] = [...inputs.map((input) => ({ file: input.path })), ...links.map((url) => ({ url }))];
  if (files.length === 0) throw new UsageError("no audio file among the files and folders named");
  const fields: Record<string, string> = { kind };
  if (values.model) fields.model = values.model;
  if (values.ensemble) fields.ensemble = values.ensemble;
  if (values.analyze) fields.analyze = "true";

  const kits = createKitsClient({ baseUrl: server, apiKey });
  await mkdir(stateDir, { recursive: true });
  const groups: BatchInput[][] = [];
  for (let i = 0; i < files.length; i += perBatch) groups.push(files.slice(i, i + perBatch));

  // Ctrl-C stops sending and following (after the create in flight, whose id is kept), never the
  // jobs; a second one exits at once.
  let interrupted = false;
  const onSigint = () => (interrupted = true);
  process.once("SIGINT", onSigint);
  try {
    return await sendAndFollow();
  } finally {
    process.removeListener("SIGINT", onSigint);
  }

  async function sendAndFollow(): Promise<number> {
    // Each group's batch: the one a previous run made (its id kept under .mixdown-batches/), else a new one.
    const batches: Batch[] = [];
    for (const group of groups) {
      if (interrupted) break;
      const key = await idempotencyKey(server, fields, group);
      const statePath = join(stateDir, `${key}.json`);
      const known = await readFile(statePath, "utf8").then(
        (text) => (JSON.parse(text) as { id: number }).id,
        () => undefined,
      );
      if (known !== undefined) {
        const { data, response } = await kits.GET("/api/kits/v1/batches/{id}", { params: { path: { id: known } } });
        if (data) {
          batches.push(data);
          io.stderr.write(`batch ${data.id}: following it again (${data.total} jobs)\n`);
          continue;
        }
        if (response.status !== 404) throw new ServerError(`GET /batches/${known}: ${response.status}`);
      }
      const groupFiles = group.flatMap((input) => ("file" in input ? [input.file] : []));
      const groupLinks = group.flatMap((input) => ("url" in input ? [input.url] : []));
      io.stderr.write(`sending ${groupFiles.length} file(s) and ${groupLinks.length} link(s)...\n`);
      const body: Record<string, unknown> = {
        ...fields,
        files: await Promise.all(groupFiles.map((f) => fileOf(f))),
        urls: groupLinks,
      };
      const { data, error, response } = await kits.POST("/api/kits/v1/batches", {
        // The form's file parts are repeated `files` parts; openapi-fetch's typing knows one.
        body: body as never,
        bodySerializer: formData,
        headers: { "idempotency-key": key },
      });
      if (!data) throw new ServerError(`POST /batches: ${response.status} ${error?.message ?? ""}`);
      await writeFile(
        statePath,
        JSON.stringify({ id: data.id, server, files: groupFiles.map((f) => relative(out, f)), urls: groupLinks }),
      );
      for (const r of data.rejected) io.stderr.write(`batch ${data.id}: ${r.fileName ?? "a file"} made no job: ${r.reason}\n`);
      io.stderr.write(`batch ${data.id}: ${data.total} job(s)\n`);
      batches.push(data);
    }

    const bars = io.stderr.isTTY
      ? new MultiBar(
          {
            format: "batch {id} [{bar}] {percentage}% {done}/{total} jobs {state}",
            hideCursor: true,
            stream: process.stderr,
            barsize: 30,
          },
          Presets.shades_classic,
        )
      : undefined;
    const barOf = new Map<number, SingleBar>();
    const lastLine = new Map<number, string>();
    const show = (batch: Batch) => {
      const done = batch.total - batch.counts.running;
      if (bars) {
        const payload = { id: batch.id, done, total: batch.total, state: batch.status };
        const bar = barOf.get(batch.id) ?? barOf.set(batch.id, bars.create(100, 0, payload)).get(batch.id)!;
        bar.update(batch.progress, payload);
      } else {
        const line = `batch ${batch.id}: ${batch.status} ${batch.progress}% (${done}/${batch.total} jobs ended)`;
        if (lastLine.get(batch.id) !== line) io.stderr.write(`${line}\n`);
        lastLine.set(batch.id, line);
      }
    };

    const ended = new Map<number, Batch>();
    try {
      for (;;) {
        for (let i = 0; i < batches.length; i++) {
          const batch = batches[i]!;
          if (ended.has(batch.id)) continue;
          const { data, response } = await kits.GET("/api/kits/v1/batches/{id}", { params: { path: { id: batch.id } } });
          if (!data) throw new ServerError(`GET /batches/${batch.id}: ${response.status}`);
          batches[i] = data;
          show(data);
          if (data.status !== "running") {
            await downloadZip(server, bearerKey, data, out);
            ended.set(data.id, data);
          }
        }
        if (ended.size === batches.length || interrupted) break;
        await sleep(pollMs);
      }
    } finally {
      bars?.stop();
    }
    if (interrupted && (ended.size < batches.length || batches.length < groups.length)) {
      io.stderr.write(
        "stopped following; the jobs go on on the server: run the same command again to follow them (and to send the files not sent yet)\n",
      );
      return 130;
    }

    let failed = 0;
    for (const batch of batches) {
      const notOk = batch.jobs.filter((j) => j.status !== "success");
      failed += notOk.length + batch.rejected.length;
      for (const job of notOk)
        io.stderr.write(
          `batch ${batch.id}: ${job.fileName ?? `job ${job.id}`}: ${job.status}${job.errorMessage ? `: ${job.errorMessage}` : ""}\n`,
        );
      io.stdout.write(
        `batch ${batch.id}: ${batch.counts.success} succeeded, ${batch.counts.error} failed, ${batch.counts.cancelled} cancelled, ${batch.rejected.length} rejected${batch.zipUrl ? `; ${zipPath(out, batch)}` : ""}\n`,
      );
    }
    return failed > 0 ? 1 : 0;
  }
}

const fileOf = async (path: string) => new File([await openAsBlob(path)], basename(path));

/** The text of a `--urls` list: a file, or stdin for `-`. */
async function readLinks(path: string, io: BatchIo): Promise<string> {
  if (path === "-") return text(io.stdin ?? process.stdin);
  return readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`--urls ${path}: ${error.code === "ENOENT" ? "no such file" : error.message}`);
  });
}

const zipPath = (out: string, batch: Batch) => join(out, `batch-${batch.id}.zip`);

/** The batch's zip into OUT (written under a temporary name, renamed once complete; kept from an earlier run). */
async function downloadZip(server: string, apiKey: string, batch: Batch, out: string): Promise<void> {
  if (!batch.zipUrl) return;
  const target = zipPath(out, batch);
  if (
    await stat(target).then(
      () => true,
      () => false,
    )
  )
    return;
  // The record's link is the server's PUBLIC_BASE_URL, which need not be reachable from here (nor
  // the place to send the key): the same API path on the server this command was given.
  const apiPath = new URL(batch.zipUrl, server).pathname;
  const url = new URL(`${server}${apiPath.slice(apiPath.indexOf("/api/kits/v1/"))}`);
  const res = await fetch(url, { headers: { authorization: `Bearer ${apiKey}` } });
  if (!res.ok || !res.body) throw new ServerError(`GET ${url.pathname}: ${res.status}`);
  const part = `${target}.part`;
  try {
    await pipeline(Readable.fromWeb(res.body as import("node:stream/web").ReadableStream), createWriteStream(part));
    await rename(part, target);
  } catch (error) {
    await rm(part, { force: true });
    throw error;
  }
}
