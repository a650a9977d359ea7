import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { openAsBlob } from "node:fs";

/**
 * A Kits v1 client small enough to run against any Mixdown since 2026-11-26 (only the routes and
 * fields that existed then): what the backup test and the upgrade fixture's maker create jobs
 * with and read them back through.
 */
export interface KitsSession {
  base: string;
  key: string;
}

/** Every job kind's path with a list route, and the blend's (which has none). */
export const LISTED_KINDS = ["vocal-separations", "stem-splits", "voice-conversions", "tts"] as const;

export async function kits<T = Record<string, unknown>>(
  session: KitsSession,
  method: string,
  path: string,
  body?: FormData | object,
): Promise<T> {
  const json = body !== undefined && !(body instanceof FormData);
  const response = await fetch(`${session.base}/api/kits/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${session.key}`, ...(json ? { "content-type": "application/json" } : {}) },
    body: json ? JSON.stringify(body) : (body as FormData | undefined),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

export async function form(fields: Record<string, string | { file: string }>): Promise<FormData> {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) {
    if (typeof value === "string") data.append(name, value);
    else data.append(name, await openAsBlob(value.file), value.file.split("/").at(-1));
  }
  return data;
}

export interface CreatedJob {
  path: string;
  id: number;
}

/**
 * One job of every kind that existed on 2026-11-26, each with a webhook when `webhookUrl` is given:
 * a vocal separation and a stem split of `mix`, a native voice built from `speech` (voice-model-build,
 * then voice-model-media), a conversion of `speech` and a TTS with a catalogue voice, a blend of two
 * catalogue voices. Returns the jobs and the built model's id.
 */
export async function createJobsOfEveryKind(
  session: KitsSession,
  files: { mix: string; speech: string },
  webhookUrl?: string,
): Promise<{ jobs: CreatedJob[]; voiceModelId: number }> {
  const hook: Record<string, string> = webhookUrl ? { webhookUrl } : {};
  const { data: voices } = await kits<{ data: { id: number; public: boolean; instrument: boolean }[] }>(
    session,
    "GET",
    "/voice-models",
  );
  const [first, second] = voices.filter((v) => v.public && !v.instrument);
  const jobs: CreatedJob[] = [];
  const create = async (path: string, body: FormData | object) => {
    const { id } = await kits<{ id: number }>(session, "POST", `/${path}`, body);
    jobs.push({ path, id });
  };
  await create("vocal-separations", await form({ inputFile: { file: files.mix }, ...hook }));
  await create("stem-splits", await form({ inputFile: { file: files.mix }, ...hook }));
  await create(
    "voice-conversions",
    await form({ soundFile: { file: files.speech }, voiceModelId: String(first!.id), pitchShift: "2", ...hook }),
  );
  await create("tts", await form({ voiceModelId: String(second!.id), inputTtsText: "A backup kept for a year.", ...hook }));
  await create("voice-blender", { modelId1: first!.id, modelId2: second!.id, alpha: 0.6, ...hook });
  const built = await kits<{ id: number }>(
    session,
    "POST",
    "/voice-models",
    await form({ referenceFile: { file: files.speech }, metadata: JSON.stringify({ title: "Built from a reference" }) }),
  );
  return { jobs, voiceModelId: built.id };
}

/** Waits until a job has ended; its record. */
export async function waitEnded(session: KitsSession, job: CreatedJob, timeoutMs = 300_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const record = await kits(session, "GET", `/${job.path}/${job.id}`);
    if (record.status !== "running") return record;
    if (Date.now() > deadline) throw new Error(`${job.path}/${job.id} still running after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Waits until a voice model is usable and its cover and demo are rendered; its record. */
export async function waitModelReady(session: KitsSession, id: number, timeoutMs = 300_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const model = await kits(session, "GET", `/voice-models/${id}`);
    if (model.state === "failed") throw new Error(`voice model ${id} failed: ${String(model.errorMessage)}`);
    // Until the worker has rendered them, a model's image and demo URLs are API routes answering 409.
    const rendered = [model.imageUrl, model.demoUrl].every((url) => typeof url === "string" && !url.includes("/api/kits/v1/"));
    if (model.usable && rendered) return model;
    if (Date.now() > deadline) throw new Error(`voice model ${id} still ${String(model.state)} after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * Records as the API answers them with each signed URL cut to its path: the same records read at
 * another time, or from a restored install, compare equal.
 */
export function withoutSignatures<T>(value: T): T {
  return JSON.parse(
    JSON.stringify(value, (_key, v: unknown) =>
      typeof v === "string" && /^https?:\/\/[^ ]*\?/.test(v) ? new URL(v).pathname : v,
    ),
  ) as T;
}

/** Every list the API has (each job kind's, the voice models'), first page of 100. */
export async function listEverything(session: KitsSession): Promise<Record<string, unknown>> {
  const lists: Record<string, unknown> = {};
  for (const path of [...LISTED_KINDS, "voice-models"]) {
    lists[path] = withoutSignatures(await kits(session, "GET", `/${path}?perPage=100`));
  }
  return lists;
}

/** The sha256 of a served file; an API route (a voice model's image, before 2026-11-27) with the session's key. */
export async function sha256Of(url: string, session?: KitsSession): Promise<string> {
  const onApi = session !== undefined && url.startsWith(`${session.base}/api/`);
  const response = await fetch(url, onApi ? { headers: { authorization: `Bearer ${session.key}` } } : {});
  if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
  return createHash("sha256")
    .update(Buffer.from(await response.arrayBuffer()))
    .digest("hex");
}

/** A mixture of two sines (220 and 660 Hz) written by ffmpeg: input audio of any length for the jobs. */
export function writeSineMixture(file: string, seconds: number, channels = 2, rate = 44100): void {
  const tone = (hz: number) => ["-f", "lavfi", "-i", `sine=f=${hz}:d=${seconds}`];
  const mixing = ["-filter_complex", "amix=inputs=2", "-ac", String(channels), "-ar", String(rate)];
  execFileSync("ffmpeg", ["-v", "error", ...tone(220), ...tone(660), ...mixing, file]);
}

/**
 * What an install answered, to be compared with what it answers later (after an upgrade, or a backup
 * restored elsewhere): records by their path (`vocal-separations/3`), with signatures cut; the
 * lists; the sha256 of files, by the path of the URL that served them.
 */
export interface KitsState {
  records: Record<string, Record<string, unknown>>;
  lists: Record<string, unknown>;
  files: Record<string, string>;
}

/** Every URL in a record, by its path. */
export function urlsOf(value: unknown, into = new Map<string, string>()): Map<string, string> {
  if (typeof value === "string" && /^https?:\/\//.test(value)) into.set(new URL(value).pathname, value);
  else if (value !== null && typeof value === "object") for (const v of Object.values(value)) urlsOf(v, into);
  return into;
}

/**
 * The state of these records (paths as `vocal-separations/3`), the lists, and the sha256 of every
 * file the records name (each downloaded once).
 */
export async function captureState(session: KitsSession, paths: string[]): Promise<KitsState> {
  const state: KitsState = { records: {}, lists: await listEverything(session), files: {} };
  const urls = new Map<string, string>();
  for (const where of paths) {
    const record = await kits(session, "GET", `/${where}`);
    state.records[where] = withoutSignatures(record);
    urlsOf(record, urls);
  }
  for (const [file, url] of urls) state.files[file] = await sha256Of(url, session);
  return state;
}

/** Every field the old answer had is answered now with the same value (fields added since aside). */
export function assertKeeps(actual: unknown, old: unknown, where: string): void {
  if (old !== null && typeof old === "object") {
    assert.ok(actual !== null && typeof actual === "object", `${where}: ${JSON.stringify(actual)} is not an object`);
    if (Array.isArray(old)) {
      assert.ok(Array.isArray(actual), `${where} is no longer a list`);
      assert.equal(actual.length, old.length, `${where}: length`);
    }
    for (const [key, value] of Object.entries(old)) {
      assertKeeps((actual as Record<string, unknown>)[key], value, `${where}.${key}`);
    }
    return;
  }
  assert.equal(actual, old, where);
}

type Listed = { data: { id: number; public?: boolean }[] };

/**
 * Every item of the old list is listed still, with every old field and value; what is listed besides
 * may only be public models (a newer release ships more built-in voices): no job or caller's model.
 */
function assertListKept(actual: unknown, old: unknown, where: string): void {
  const now = (actual as Listed).data;
  const before = (old as Listed).data;
  assert.ok(Array.isArray(now), `${where}: ${JSON.stringify(actual)} has no data list`);
  for (const item of before) {
    const same = now.find((listed) => listed.id === item.id);
    assert.ok(same, `${where}: ${item.id} is no longer listed`);
    assertKeeps(same, item, `${where} ${item.id}`);
  }
  const added = now.filter((listed) => !listed.public && !before.some((item) => item.id === listed.id));
  assert.deepEqual(
    added.map((listed) => listed.id),
    [],
    `${where}: listed now and not before`,
  );
}

/**
 * The install still answers `state`: every record keeps every field and value, every list its
 * items (unless `lists: false`: jobs have been added or have ended since), and every file is still
 * named by a record and served byte for byte. Returns the records as answered now.
 */
export async function assertStateKept(
  session: KitsSession,
  state: KitsState,
  options: { lists?: boolean } = {},
): Promise<Map<string, Record<string, unknown>>> {
  const current = new Map<string, Record<string, unknown>>();
  const served = new Map<string, string>();
  for (const [where, old] of Object.entries(state.records)) {
    const record = await kits(session, "GET", `/${where}`);
    current.set(where, record);
    assertKeeps(withoutSignatures(record), old, where);
    urlsOf(record, served);
  }
  if (options.lists !== false) {
    const lists = await listEverything(session);
    for (const [where, old] of Object.entries(state.lists)) assertListKept(lists[where], old, `GET /${where}`);
  }
  for (const [file, sum] of Object.entries(state.files)) {
    assert.ok(served.has(file), `${file} is still named by a record`);
    assert.equal(await sha256Of(served.get(file)!, session), sum, `${file} is served as it was stored`);
  }
  return current;
}
