import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Config } from "@mixdown/config";
import type { RecordKind } from "@mixdown/jobs";
import { asStreamId, compareStreamIds, type StoredJobEvent } from "@mixdown/queue";
import { Type } from "typebox";
import { ApiError, OUTAGE_RETRY_AFTER_SECONDS } from "../http/errors.ts";
import { bearerSecurity, errorResponses, IdParams, NoContent } from "../http/schemas.ts";
import { EventStream, type EventStreamOptions, type ServerSentEvent } from "./event-stream.ts";
import type { JobEventHub, JobEventSubscriber } from "./job-event-hub.ts";

type App = Parameters<FastifyPluginAsyncTypebox>[0];

/** The `id:` of a stream's final record: the end's id and this mark, so a reconnect after it is told 204. */
const FINAL_MARK = "/final";

/** A replay reads the events after a client's `Last-Event-ID` this many at a time. */
const REPLAY_BATCH = 500;

export const streamOptions = (config: Config): EventStreamOptions => ({
  heartbeatMs: config.JOB_EVENTS_HEARTBEAT_SECONDS * 1000,
  retryMs: config.JOB_EVENTS_RETRY_MS,
  maxPending: config.JOB_EVENTS_MAX_PENDING,
});

/** What every event stream documents: the answer is text/event-stream, resumed with `Last-Event-ID`. */
const LastEventIdHeaders = Type.Object({
  "last-event-id": Type.Optional(
    Type.String({
      description:
        "The `id:` of the last event the client read (browsers' EventSource sends it when it reconnects): the stream resumes after it",
    }),
  ),
});
const eventStreamAnswer = (description: string) => ({
  description,
  content: {
    "text/event-stream": { schema: { type: "string", description: "Server-Sent Events (docs/api.md, Event streams)" } },
  },
});

/** The data of a `status` event: which job, and its status and progress now. */
export interface JobStatusData {
  kind: string;
  id: number;
  status: string;
  progress: number;
}

const statusEvent = (id: string, data: JobStatusData): ServerSentEvent => ({ event: "status", id, data });

/**
 * Subscribes to the caller's events before reading where the stream stands (`since`, the newest
 * event id; what happened up to it is in what is read next): events that arrive meanwhile wait
 * in `early` until `start` hands them to the live handler, and those up to `since` are dropped.
 */
/** How long opening a stream waits for Redis before answering 503 (its commands wait while it is away). */
const REDIS_WAIT_MS = 5_000;

/** What Redis answers, or a 503 with `Retry-After` when it cannot be reached (or not within REDIS_WAIT_MS). */
async function fromRedis<T>(answer: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${REDIS_WAIT_MS} ms`)), REDIS_WAIT_MS);
  });
  try {
    return await Promise.race([answer, late]);
  } catch (error) {
    throw new ApiError(
      503,
      `job events are unavailable (Redis could not be reached: ${(error as Error).message}); retry in ${OUTAGE_RETRY_AFTER_SECONDS} seconds`,
      { "retry-after": String(OUTAGE_RETRY_AFTER_SECONDS) },
    );
  } finally {
    clearTimeout(timer);
  }
}

async function subscribeFirst(hub: JobEventHub, callerId: number, accept: (stored: StoredJobEvent) => boolean) {
  const early: StoredJobEvent[] = [];
  let live: ((stored: StoredJobEvent) => void) | undefined;
  let resync: (() => void) | undefined;
  const subscriber: JobEventSubscriber = {
    onEvent: (stored) => {
      if (!accept(stored)) return;
      if (live) live(stored);
      else early.push(stored);
    },
    onResync: () => resync?.(),
  };
  const subscribing = hub.subscribe(callerId, subscriber);
  const remove = await fromRedis(subscribing).catch((error: unknown) => {
    // Answered 503 before the hub's reader started: the subscription goes once it settles.
    void subscribing.then(
      (late) => late(),
      () => undefined,
    );
    throw error;
  });
  try {
    const since = await fromRedis(hub.log.newestId());
    return {
      since,
      remove,
      start(handlers: { onEvent(stored: StoredJobEvent): void; onResync(): void }) {
        live = (stored) => {
          if (compareStreamIds(stored.id, since) > 0) handlers.onEvent(stored);
        };
        resync = handlers.onResync;
        for (const stored of early.splice(0)) live(stored);
      },
    };
  } catch (error) {
    remove();
    throw error;
  }
}

/**
 * `GET /<path>/:id/events`: one job's status and progress as they change, its record (what the
 * GET answers) when it ends, then the end of the stream.
 */
export function jobEventsRoute(
  app: App,
  route: { path: string; tags: string[]; noun: string; operation: string; recordKind: RecordKind },
  get: (callerId: number, id: number) => Promise<unknown>,
  events: { hub: JobEventHub; options: EventStreamOptions },
): void {
  const { path, recordKind } = route;
  const { hub, options } = events;
  hub.nameKind(recordKind, path);
  app.get(
    `/${path}/:id/events`,
    {
      schema: {
        tags: route.tags,
        operationId: `stream${route.operation}Events`,
        summary: `Follow one ${route.noun} job as it runs (Server-Sent Events)`,
        description: `A \`text/event-stream\` of the caller's ${route.noun} job: first a \`status\` event with its status and progress now, then one each time they change, and once it has ended a \`record\` event whose data is exactly what \`GET /${path}/{id}\` answers; then the stream ends. Every event has an \`id:\`; a client that reconnects with \`Last-Event-ID\` gets the job's status now (and its record once it has ended), and 204 when the id is that of the record it already read. A comment line every JOB_EVENTS_HEARTBEAT_SECONDS keeps proxies from closing it. 404 when the job is not the caller's. Polling the GET stays as it is.`,
        security: bearerSecurity,
        params: IdParams,
        headers: LastEventIdHeaders,
        response: {
          200: eventStreamAnswer("The job's events: `status` events, then its `record`"),
          204: NoContent("`Last-Event-ID` is the job's final record: nothing more will come"),
          ...errorResponses(401, 404, 429),
        },
      },
    },
    async (request, reply) => {
      const callerId = request.auth.caller.id;
      const id = request.params.id;
      const matches = (stored: StoredJobEvent) => stored.event.recordKind === recordKind && stored.event.rowId === id;
      const subscription = await subscribeFirst(hub, callerId, matches);
      let current: { status: string; progress: number };
      try {
        current = (await get(callerId, id)) as typeof current;
      } catch (error) {
        subscription.remove();
        throw error;
      }
      if (current.status !== "running" && request.headers["last-event-id"]?.endsWith(FINAL_MARK)) {
        subscription.remove();
        return reply.code(204).send();
      }
      const stream = new EventStream(request, reply, options);
      stream.onClose(subscription.remove);
      const key = `${path}:${id}`;
      const status = (eventId: string, s: { status: string; progress: number }) =>
        statusEvent(eventId, { kind: path, id, status: s.status, progress: s.progress });
      let ending = false;
      const finish = (eventId: string, record?: unknown) => {
        if (ending) return;
        ending = true;
        // Read again: the end's record (signed URLs) as the GET answers it now.
        const read = record !== undefined ? Promise.resolve(record) : get(callerId, id);
        void read.then(
          (data) => stream.end({ event: "record", id: `${eventId}${FINAL_MARK}`, data }),
          () => stream.end(),
        );
      };
      stream.send(key, status(subscription.since, current));
      if (current.status !== "running") return finish(subscription.since, current);
      subscription.start({
        onEvent: ({ id: eventId, event }) => {
          if (ending) return;
          stream.send(key, status(eventId, event));
          if (event.status !== "running") finish(eventId);
        },
        // Redis was away: an end appended meanwhile may be lost, so the row says where the job is.
        onResync: () =>
          void hub.log
            .newestId()
            .then(async (eventId) => {
              const now = (await get(callerId, id)) as typeof current;
              if (ending) return;
              stream.send(key, status(eventId, now));
              if (now.status !== "running") finish(eventId, now);
            })
            .catch(() => stream.close()),
      });
    },
  );
}

/** `GET /events`: every status and progress change of every job of the caller, as long as the client stays. */
export const callerEventRoutes: FastifyPluginAsyncTypebox<{ hub: JobEventHub; options: EventStreamOptions }> = async (
  app,
  { hub, options },
) => {
  app.get(
    "/events",
    {
      schema: {
        tags: ["Events"],
        operationId: "streamCallerEvents",
        summary: "Follow all of the caller's jobs (Server-Sent Events)",
        description:
          "A `text/event-stream` that stays open: a `ready` event once it is following, then a `status` event (`{ kind, id, status, progress }`, `kind` the path of the job's kind: `vocal-separations`, `stem-splits`, `voice-conversions`, `voice-blender`, `tts`, `audio-analyses`, `vocal-repairs`, `masterings`, `harmonies`, `pipelines`) each time a job of the caller starts, progresses or ends, in every kind. A client that reconnects with `Last-Event-ID` gets the events it missed, as long as the service still holds them (JOB_EVENTS_RETAINED); when it no longer does, a `resync` event says to read the lists again. Heartbeat comments every JOB_EVENTS_HEARTBEAT_SECONDS.",
        security: bearerSecurity,
        headers: LastEventIdHeaders,
        response: {
          200: eventStreamAnswer("`ready`, then `status` events of the caller's jobs (and `resync` when some were missed)"),
          ...errorResponses(401, 429),
        },
      },
    },
    async (request, reply) => {
      const callerId = request.auth.caller.id;
      const subscription = await subscribeFirst(hub, callerId, () => true);
      const stream = new EventStream(request, reply, options);
      stream.onClose(subscription.remove);
      const { since } = subscription;
      const keyOf = ({ event }: StoredJobEvent) => `${event.recordKind}:${event.rowId}`;
      const send = (stored: StoredJobEvent) =>
        stream.send(
          keyOf(stored),
          statusEvent(stored.id, {
            kind: hub.pathOf(stored.event.recordKind),
            id: stored.event.rowId,
            status: stored.event.status,
            progress: stored.event.progress,
          }),
        );
      const resync = (eventId: string) => stream.send("resync", { event: "resync", id: eventId, data: {} });
      try {
        await replay(request.headers["last-event-id"], hub, callerId, since, send, () => resync(since));
      } catch {
        stream.close();
        return;
      }
      stream.send("ready", { event: "ready", id: since, data: {} });
      subscription.start({
        onEvent: send,
        onResync: () => void hub.log.newestId().then(resync, () => stream.close()),
      });
    },
  );
};

/** The caller's events after the client's `Last-Event-ID` up to `since`, or `missed` when the stream no longer holds them all. */
async function replay(
  lastEventId: string | undefined,
  hub: JobEventHub,
  callerId: number,
  since: string,
  send: (stored: StoredJobEvent) => void,
  missed: () => void,
): Promise<void> {
  const lastId = asStreamId(lastEventId);
  if (!lastId || compareStreamIds(lastId, since) >= 0) return;
  const oldest = await hub.log.oldestId();
  if (!oldest || compareStreamIds(oldest, lastId) > 0) return missed();
  let cursor = lastId;
  while (compareStreamIds(cursor, since) < 0) {
    const batch = await hub.log.after(cursor, REPLAY_BATCH);
    if (batch.length === 0) return;
    for (const stored of batch) {
      if (compareStreamIds(stored.id, since) > 0) return;
      if (stored.event.callerId === callerId) send(stored);
    }
    cursor = batch[batch.length - 1]!.id;
  }
}
