import type { FastifyReply, FastifyRequest } from "fastify";

/** How a stream is written: JOB_EVENTS_HEARTBEAT_SECONDS, JOB_EVENTS_RETRY_MS, JOB_EVENTS_MAX_PENDING. */
export interface EventStreamOptions {
  heartbeatMs: number;
  retryMs: number;
  maxPending: number;
}

/** One Server-Sent Event: `event:`, `id:` and a JSON `data:` line. */
export interface ServerSentEvent {
  event: string;
  id: string;
  data: unknown;
}

const format = ({ event, id, data }: ServerSentEvent) => `event: ${event}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * A `text/event-stream` answer on a hijacked reply: the headers (the ones the app's hooks set, such
 * as the security headers, plus those that keep proxies from buffering or caching it), a `retry:`
 * hint, a heartbeat comment every `heartbeatMs`, and events.
 *
 * Memory is bounded per stream: while the client reads slower than events come (the socket's
 * buffer is full), events wait here, one per `key` (a job's later event replaces its earlier), at
 * most `maxPending`; past that the stream is closed and the client resumes with `Last-Event-ID`.
 * The client gone (or the stream closed) runs every `onClose` callback once.
 */
export class EventStream {
  readonly #res: FastifyReply["raw"];
  readonly #pending = new Map<string, string>();
  readonly #onClose: Array<() => void> = [];
  readonly #heartbeat: NodeJS.Timeout;
  #closed = false;

  constructor(
    request: FastifyRequest,
    reply: FastifyReply,
    private readonly options: EventStreamOptions,
  ) {
    reply.hijack();
    this.#res = reply.raw;
    this.#res.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      connection: "keep-alive",
      // nginx buffers a proxied answer unless told not to (docs/running.md).
      "x-accel-buffering": "no",
    });
    this.#res.write(`retry: ${options.retryMs}\n\n`);
    this.#heartbeat = setInterval(() => {
      if (!this.#res.writableNeedDrain) this.#res.write(": heartbeat\n\n");
    }, options.heartbeatMs);
    this.#res.on("drain", () => this.#flush());
    request.raw.socket.on("close", () => this.close());
    this.#res.on("close", () => this.close());
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Events waiting for the client to read (what a slow client costs). */
  get pending(): number {
    return this.#pending.size;
  }

  onClose(callback: () => void): void {
    if (this.#closed) callback();
    else this.#onClose.push(callback);
  }

  /** Writes the event, or keeps it (replacing the previous one of `key`) while the client is behind. */
  send(key: string, event: ServerSentEvent): void {
    if (this.#closed) return;
    if (!this.#res.writableNeedDrain && this.#pending.size === 0) {
      this.#res.write(format(event));
      return;
    }
    // Deleted first so the map's order stays the events' order (ids increase as they are sent).
    this.#pending.delete(key);
    this.#pending.set(key, format(event));
    if (this.#pending.size > this.options.maxPending) this.close();
  }

  /** Writes the event whatever the client's pace (the last of a stream), then ends the answer. */
  end(event?: ServerSentEvent): void {
    if (this.#closed) return;
    for (const text of this.#pending.values()) this.#res.write(text);
    this.#pending.clear();
    this.#res.end(event ? format(event) : undefined);
    this.close();
  }

  #flush(): void {
    for (const [key, text] of this.#pending) {
      if (this.#res.writableNeedDrain) return;
      this.#pending.delete(key);
      this.#res.write(text);
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#heartbeat);
    this.#pending.clear();
    if (!this.#res.writableEnded) this.#res.end();
    // A client that stopped reading would keep the socket (and its buffer) forever.
    if (this.#res.writableNeedDrain) this.#res.destroy();
    for (const callback of this.#onClose.splice(0)) callback();
  }
}
