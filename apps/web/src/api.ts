import {
  type Batch,
  createKitsClient,
  formData,
  EventStreamRefused,
  openEventStream,
  type JobStatusEvent,
  type paths,
  type StreamEvent,
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

/**
 * The job kinds, as the API's document has them: every path with a cancel route
 * (`/api/kits/v1/<kind>/{id}/cancel`) but `batches` (a batch is not a job kind: it names jobs of
 * the separation kinds). A kind the API gains is a kind here, and the dashboard's views
 * (kinds/index.ts) do not compile until it has one.
 */
export type JobKind = Exclude<
  keyof paths extends infer P ? (P extends `/api/kits/v1/${infer K}/{id}/cancel` ? K : never) : never,
  "batches"
>;

type JobPath = `/api/kits/v1/${JobKind}/{id}`;
/** The record a kind's GET answers with. */
export type JobOf<K extends JobKind> = paths[`/api/kits/v1/${K}/{id}`]["get"]["responses"][200]["content"]["application/json"];

/** A job with its kind: narrowing on `kind` narrows `job` to that kind's record. */
export type AnyJob = { [K in JobKind]: { kind: K; job: JobOf<K> } }[JobKind];

/** Pairs a record with its kind (the API's answer for `kind` is that kind's record). */
export function jobOfKind(kind: JobKind, job: unknown): AnyJob {
  return { kind, job } as AnyJob;
}

export async function fetchJob(kind: JobKind, id: number): Promise<AnyJob> {
  const path = `/api/kits/v1/${kind}/{id}` as JobPath;
  return jobOfKind(kind, await unwrap(kits.GET(path, { params: { path: { id } } })));
}

export async function cancelJob(kind: JobKind, id: number): Promise<AnyJob> {
  const path = `/api/kits/v1/${kind}/{id}/cancel` as `${JobPath}/cancel`;
  return jobOfKind(kind, await unwrap(kits.POST(path, { params: { path: { id } } })));
}

/** The record with the status and progress a `status` event says it has now. */
export function withStatus(current: AnyJob, event: JobStatusEvent): AnyJob {
  return { ...current, job: { ...current.job, status: event.status, progress: event.progress } } as AnyJob;
}

/**
 * Follows one of the API's event streams (docs/api.md, Event streams) with the signed-in key:
 * `fetch` rather than EventSource, which cannot send the Authorization header. A dropped stream
 * is opened again after the last event it gave (`Last-Event-ID`); one that ends after its
 * `final` event is done. When the stream cannot be had (refused, or dropped three times in a
 * row) `fallBack` is called once and the caller polls instead. Returns the function that stops it.
 */
export function followEvents(
  path: string,
  handlers: { event(event: StreamEvent): void; fallBack(): void },
  final?: string,
): () => void {
  const controller = new AbortController();
  const { signal } = controller;
  void (async () => {
    let lastEventId: string | undefined;
    let failures = 0;
    while (!signal.aborted) {
      let ended = false;
      try {
        for await (const event of openEventStream(path, {
          apiKey: apiKey.get(),
          signal,
          ...(lastEventId ? { lastEventId } : {}),
        })) {
          failures = 0;
          lastEventId = event.id;
          handlers.event(event);
          if (event.event === final) ended = true;
        }
        // Nothing more comes after the final event; any other end is a stream to open again.
        if (ended) return;
      } catch (error) {
        if (signal.aborted) return;
        const refused = error instanceof EventStreamRefused && error.status < 500 && error.status !== 429;
        if (refused || ++failures >= 3) return handlers.fallBack();
      }
      await new Promise((resolve) => setTimeout(resolve, 1000 * Math.max(1, failures)));
    }
  })();
  return () => controller.abort();
}

/** A DELETE's answer: 204 and no body, else the API's error. */
async function removed(call: Promise<{ error?: unknown; response: Response }>): Promise<void> {
  const { error, response } = await call;
  if (!response.ok) throw new ApiFailure(errorText(error, response), response.status);
}

/** Deletes the job with its files (a running one is cancelled first). */
export async function deleteJob(kind: JobKind, id: number): Promise<void> {
  const path = `/api/kits/v1/${kind}/{id}` as JobPath;
  await removed(kits.DELETE(path, { params: { path: { id } } }));
}

/** Deletes one of the caller's voice models with its files and the ended jobs that used it. */
export async function deleteVoiceModel(id: number): Promise<void> {
  await removed(kits.DELETE("/api/kits/v1/voice-models/{id}", { params: { path: { id } } }));
}

export interface JobPage {
  rows: AnyJob[];
  total: number;
}

/**
 * Every kind's jobs, newest first. The API pages each kind on its own, so page `n` of the merged
 * list needs the newest `n * perPage` of each kind (at most 100 a kind: deeper pages stop there).
 */
export async function listJobs(
  kinds: readonly JobKind[],
  page: number,
  perPage: number,
): Promise<JobPage & { truncated: boolean }> {
  const depth = Math.min(100, page * perPage);
  const query = { params: { query: { order: "desc" as const, page: 1, perPage: depth } } };
  const pages = await Promise.all(
    kinds.map(async (kind) => ({
      kind,
      page: await unwrap(kits.GET(`/api/kits/v1/${kind}` as `/api/kits/v1/${JobKind}`, query)),
    })),
  );
  const all = pages
    .flatMap(({ kind, page }) => page.data.map((job) => jobOfKind(kind, job)))
    .sort((a, b) => (a.job.createdAt < b.job.createdAt ? 1 : a.job.createdAt > b.job.createdAt ? -1 : 0));
  const total = pages.reduce((sum, { page }) => sum + page.meta.total, 0);
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

/** The batch kind of each separation job kind (a batch's `kind` names its jobs' kind in the singular). */
export const BATCH_KINDS = { "vocal-separations": "vocal-separation", "stem-splits": "stem-split" } as const;
/** The job kind (its API path) of a batch's jobs. */
export const jobKindOfBatch = (batch: Batch): "vocal-separations" | "stem-splits" =>
  batch.kind === "stem-split" ? "stem-splits" : "vocal-separations";

/** One batch of `kind`: a job per file and per link (the server downloads those), with the options every job takes. */
export async function createBatch(
  kind: Batch["kind"],
  files: File[],
  /** The kind's own create fields but the file (model, ensemble, webhookUrl, output options...). */
  options: Record<string, string | number | undefined>,
  urls: string[] = [],
): Promise<Batch> {
  // The form repeats its `files` part and its `urls` field; the document's type names one part.
  const body = {
    kind,
    ...options,
    files: files.length > 0 ? files : undefined,
    urls: urls.length > 0 ? urls : undefined,
  } as never;
  return unwrap(kits.POST("/api/kits/v1/batches", { body, bodySerializer: formData }));
}

export const fetchBatch = (id: number): Promise<Batch> =>
  unwrap(kits.GET("/api/kits/v1/batches/{id}", { params: { path: { id } } }));

export const cancelBatch = (id: number): Promise<Batch> =>
  unwrap(kits.POST("/api/kits/v1/batches/{id}/cancel", { params: { path: { id } } }));

export async function deleteBatch(id: number): Promise<void> {
  await removed(kits.DELETE("/api/kits/v1/batches/{id}", { params: { path: { id } } }));
}

export const listBatches = (page: number, perPage: number) =>
  unwrap(kits.GET("/api/kits/v1/batches", { params: { query: { order: "desc", page, perPage } } }));

/**
 * The batch's zip, saved by the browser. Its route wants the key in a header, so it is read with
 * `fetch` (held by the browser as a Blob, not by this page's memory) and handed to a download link.
 */
export async function downloadBatchZip(batch: Batch): Promise<void> {
  const res = await fetch(`/api/kits/v1/batches/${batch.id}/zip`, { headers: { authorization: `Bearer ${apiKey.get()}` } });
  if (!res.ok) throw new ApiFailure(errorText(await res.json().catch(() => undefined), res), res.status);
  const url = URL.createObjectURL(await res.blob());
  const link = Object.assign(document.createElement("a"), { href: url, download: `batch-${batch.id}.zip` });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
