import {
  createKitsClient,
  type SeparationJob,
  type TtsJob,
  type VoiceBlendJob,
  type VoiceConversionJob,
  type VoiceModel,
} from "@mixdown/kits-client";

const KEY_STORAGE = "mixdown.apiKey";

export const apiKey = {
  get: (): string | null => localStorage.getItem(KEY_STORAGE),
  set: (key: string) => localStorage.setItem(KEY_STORAGE, key),
  clear: () => localStorage.removeItem(KEY_STORAGE),
};

/** Same origin as the page: the API process serves both. */
export const kits = createKitsClient({ apiKey: apiKey.get });

/** The API answers errors as `{ statusCode, error, message }`; anything else is a network failure. */
export function errorText(error: unknown, response?: Response): string {
  if (error && typeof error === "object" && "message" in error && typeof error.message === "string") {
    return response ? `${error.message} (${response.status})` : error.message;
  }
  if (response) return `The server answered ${response.status} ${response.statusText}.`;
  return error instanceof Error ? error.message : "The request failed.";
}

export class ApiFailure extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The data of an openapi-fetch answer, or an ApiFailure carrying the server's message. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (error !== undefined || data === undefined) throw new ApiFailure(errorText(error, response), response.status);
  return data;
}

export type JobKind = "vocal-separations" | "stem-splits" | "voice-conversions" | "tts" | "voice-blender";

export const KIND_LABELS: Record<JobKind, string> = {
  "vocal-separations": "Vocal separation",
  "stem-splits": "Stem split",
  "voice-conversions": "Voice conversion",
  tts: "Text to speech",
  "voice-blender": "Voice blend",
};

export type AnyJob =
  | { kind: "vocal-separations" | "stem-splits"; job: SeparationJob }
  | { kind: "voice-conversions"; job: VoiceConversionJob }
  | { kind: "tts"; job: TtsJob }
  | { kind: "voice-blender"; job: VoiceBlendJob };

export function isJobKind(value: string): value is JobKind {
  return value in KIND_LABELS;
}

export async function fetchJob(kind: JobKind, id: number): Promise<AnyJob> {
  const params = { params: { path: { id } } };
  switch (kind) {
    case "vocal-separations":
      return { kind, job: await unwrap(kits.GET("/api/kits/v1/vocal-separations/{id}", params)) };
    case "stem-splits":
      return { kind, job: await unwrap(kits.GET("/api/kits/v1/stem-splits/{id}", params)) };
    case "voice-conversions":
      return { kind, job: await unwrap(kits.GET("/api/kits/v1/voice-conversions/{id}", params)) };
    case "tts":
      return { kind, job: await unwrap(kits.GET("/api/kits/v1/tts/{id}", params)) };
    case "voice-blender":
      return { kind, job: await unwrap(kits.GET("/api/kits/v1/voice-blender/{id}", params)) };
  }
}

export async function cancelJob(kind: JobKind, id: number): Promise<AnyJob> {
  const params = { params: { path: { id } } };
  switch (kind) {
    case "vocal-separations":
      return { kind, job: await unwrap(kits.POST("/api/kits/v1/vocal-separations/{id}/cancel", params)) };
    case "stem-splits":
      return { kind, job: await unwrap(kits.POST("/api/kits/v1/stem-splits/{id}/cancel", params)) };
    case "voice-conversions":
      return { kind, job: await unwrap(kits.POST("/api/kits/v1/voice-conversions/{id}/cancel", params)) };
    case "tts":
      return { kind, job: await unwrap(kits.POST("/api/kits/v1/tts/{id}/cancel", params)) };
    case "voice-blender":
      return { kind, job: await unwrap(kits.POST("/api/kits/v1/voice-blender/{id}/cancel", params)) };
  }
}

export interface JobPage {
  rows: AnyJob[];
  total: number;
}

/**
 * Every kind's jobs, newest first. The API pages each kind on its own, so page `n` of the merged
 * list needs the newest `n * perPage` of each kind (at most 100 a kind: deeper pages stop there).
 */
export async function listJobs(page: number, perPage: number): Promise<JobPage & { truncated: boolean }> {
  const depth = Math.min(100, page * perPage);
  const query = { params: { query: { order: "desc" as const, page: 1, perPage: depth } } };
  const [separations, splits, conversions, speech, blends] = await Promise.all([
    unwrap(kits.GET("/api/kits/v1/vocal-separations", query)),
    unwrap(kits.GET("/api/kits/v1/stem-splits", query)),
    unwrap(kits.GET("/api/kits/v1/voice-conversions", query)),
    unwrap(kits.GET("/api/kits/v1/tts", query)),
    unwrap(kits.GET("/api/kits/v1/voice-blender", query)),
  ]);
  const all: AnyJob[] = [
    ...separations.data.map((job) => ({ kind: "vocal-separations" as const, job })),
    ...splits.data.map((job) => ({ kind: "stem-splits" as const, job })),
    ...conversions.data.map((job) => ({ kind: "voice-conversions" as const, job })),
    ...speech.data.map((job) => ({ kind: "tts" as const, job })),
    ...blends.data.map((job) => ({ kind: "voice-blender" as const, job })),
  ].sort((a, b) => (a.job.createdAt < b.job.createdAt ? 1 : a.job.createdAt > b.job.createdAt ? -1 : 0));
  const total = separations.meta.total + splits.meta.total + conversions.meta.total + speech.meta.total + blends.meta.total;
  const start = (page - 1) * perPage;
  return { rows: all.slice(start, start + perPage), total, truncated: page * perPage > 100 };
}

/** Every voice model the caller may use: the public catalogue and its own (first 100 of each order). */
export async function listVoiceModels(myModels = false): Promise<VoiceModel[]> {
  const page = await unwrap(
    kits.GET("/api/kits/v1/voice-models", {
      params: { query: { order: "desc", page: 1, perPage: 100, ...(myModels ? { myModels: true } : {}) } },
    }),
  );
  return page.data;
}

/** A model's cover or demo as a URL the browser can load without an Authorization header (a signed or owner's link). */
export function mediaUrl(url: string): string | null {
  return /\/voice-models\/\d+\/(image|demo)$/.test(url) ? null : url;
}

type OpenApiDoc = {
  paths: Record<
    string,
    Record<
      string,
      { requestBody?: { content: Record<string, { schema: { properties: Record<string, { description?: string }> } }> } }
    >
  >;
};
let docs: Promise<OpenApiDoc | null> | undefined;

/**
 * What the server says about a form field (accepted formats and this deployment's size limit), read
 * from its own OpenAPI document so the page states the limits the server enforces.
 */
export async function fieldHelp(path: string, field: string): Promise<string | null> {
  docs ??= fetch("/docs/json")
    .then((r) => (r.ok ? (r.json() as Promise<OpenApiDoc>) : null))
    .catch(() => null);
  const doc = await docs;
  const content = doc?.paths[path]?.post?.requestBody?.content;
  const schema = content && Object.values(content)[0]?.schema;
  return schema?.properties[field]?.description ?? null;
}

/** Input files of conversions made in this tab, for the A/B player (the API keeps no link to them). */
export const conversionInputs = new Map<number, { url: string; name: string }>();
