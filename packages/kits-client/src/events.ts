/** One Server-Sent Event as the API's event streams send them (`data` is JSON). */
export interface StreamEvent {
  event: string;
  id: string;
  data: unknown;
}

/** A job's status and progress now, as the `status` events carry it (`kind`: the job's path, e.g. `vocal-separations`). */
export interface JobStatusEvent {
  kind: string;
  id: number;
  status: "running" | "success" | "error" | "cancelled";
  progress: number;
}

/**
 * The events of a `text/event-stream` body as they arrive (comments such as heartbeats and the
 * `retry:` hint are skipped), per the HTML standard's parsing rules for the lines the API sends.
 */
export async function* readServerSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = "";
  let event = "message";
  let id = "";
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
        if (line === "") {
          if (data.length > 0) yield { event, id, data: JSON.parse(data.join("\n")) as unknown };
          event = "message";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
        else if (field === "id") id = value;
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => undefined);
  }
}

export interface EventStreamRequest {
  /** The API key sent as `Authorization: Bearer <key>` (what browsers' EventSource cannot send). */
  apiKey?: string | null;
  /** Resume after this event (`Last-Event-ID`). */
  lastEventId?: string;
  signal?: AbortSignal;
  fetch?: typeof fetch;
}

/**
 * Opens one of the API's event streams (`/api/kits/v1/events`, `/api/kits/v1/<kind>/<id>/events`)
 * with `fetch`, so that it carries the bearer key, and yields its events until it ends. Throws
 * the answer's status when it is not a stream (404: not the caller's job); ends at once on 204
 * (the final record was read already). Reconnecting is the caller's: pass the last event's id.
 */
export async function* openEventStream(url: string, request: EventStreamRequest = {}): AsyncGenerator<StreamEvent> {
  const headers: Record<string, string> = { accept: "text/event-stream" };
  if (request.apiKey) headers.authorization = `Bearer ${request.apiKey}`;
  if (request.lastEventId) headers["last-event-id"] = request.lastEventId;
  const response = await (request.fetch ?? fetch)(url, { headers, ...(request.signal ? { signal: request.signal } : {}) });
  if (response.status === 204) return;
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw new EventStreamRefused(response.status);
  }
  yield* readServerSentEvents(response.body);
}

export class EventStreamRefused extends Error {
  constructor(readonly status: number) {
    super(`the event stream was refused: ${status}`);
  }
}
