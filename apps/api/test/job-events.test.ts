import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createJobTables, type MixdownJobTables } from "@mixdown/db";
import { compareStreamIds } from "@mixdown/queue";
import { openEventStream, EventStreamRefused, type JobStatusEvent, type StreamEvent } from "@mixdown/kits-client";
import { audio, multipart, startHarness, type Harness } from "./helpers.ts";

let h: Harness;
let base: string;
/** The tables a worker writes with (the app's own options: every change is a job event). */
let tables: MixdownJobTables;

before(async () => {
  h = await startHarness("local", {
    JOB_EVENTS_HEARTBEAT_SECONDS: "1",
    JOB_EVENTS_RETRY_MS: "1500",
    JOB_EVENTS_MAX_PENDING: "50",
  });
  await h.app.listen({ host: "127.0.0.1", port: 0 });
  const address = h.app.server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/api/kits/v1`;
  tables = createJobTables(h.prisma, h.app.ctx.jobTableOptions);
});
after(async () => {
  await h?.stop();
});

type Caller = Awaited<ReturnType<Harness["newCaller"]>>;

async function createSeparation(caller: Caller, path = "vocal-separations"): Promise<number> {
  const form = multipart({}, [{ name: "inputFile", filename: "x.wav", content: await audio("wav") }]);
  const res = await h.app.inject({
    method: "POST",
    url: `/api/kits/v1/${path}`,
    headers: { ...form.headers, ...caller.auth },
    payload: form.payload,
  });
  assert.equal(res.statusCode, 200, res.body);
  return (res.json() as { id: number }).id;
}

/** Reads a stream in the background: its events as they come, with when each came. */
function follow(url: string, key: string, lastEventId?: string) {
  const controller = new AbortController();
  const events: Array<StreamEvent & { at: number }> = [];
  let wake: (() => void) | undefined;
  const done = (async () => {
    for await (const event of openEventStream(url, {
      apiKey: key,
      signal: controller.signal,
      ...(lastEventId ? { lastEventId } : {}),
    })) {
      events.push({ ...event, at: performance.now() });
      wake?.();
    }
  })().catch((error: unknown) => {
    if (!controller.signal.aborted) throw error;
  });
  const until = async (predicate: (e: StreamEvent) => boolean, ms = 10_000) => {
    const deadline = performance.now() + ms;
    for (;;) {
      const found = events.find(predicate);
      if (found) return found;
      if (performance.now() > deadline) throw new Error(`no such event in ${ms} ms; got ${JSON.stringify(events)}`);
      await Promise.race([new Promise<void>((resolve) => (wake = resolve)), sleep(100)]);
    }
  };
  return { events, done, until, stop: () => controller.abort() };
}

async function waitForSubscribers(count: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (h.app.ctx.jobEvents.subscriberCount !== count) {
    if (Date.now() > deadline) assert.equal(h.app.ctx.jobEvents.subscriberCount, count, "open subscriptions");
    await sleep(20);
  }
}

const isStatus = (status: string, progress?: number) => (e: StreamEvent) =>
  e.event === "status" &&
  (e.data as JobStatusEvent).status === status &&
  (progress === undefined || (e.data as JobStatusEvent).progress === progress);

describe("one job's event stream", () => {
  test("sends the status now, each change as it is written, then the record the GET answers, and ends", async () => {
    const caller = await h.newCaller();
    const id = await createSeparation(caller);
    const stream = follow(`${base}/vocal-separations/${id}/events`, caller.key);
    const first = await stream.until(() => true);
    assert.deepEqual(first.data, { kind: "vocal-separations", id, status: "running", progress: 0 });
    assert.match(first.id, /^\d+-\d+$/);

    await tables.separation.markStarted(id, true);
    await stream.until(isStatus("running", 1));
    await tables.separation.setProgress(id, 40);
    await stream.until(isStatus("running", 40));
    await tables.separation.fail(id, "the model could not read it");
    await stream.done;

    const names = stream.events.map((e) => e.event);
    assert.deepEqual(names, ["status", "status", "status", "status", "record"]);
    const ids = stream.events.map((e) => e.id);
    assert.equal(new Set(ids).size, ids.length, "every event has an id of its own");
    assert.deepEqual(stream.events[3]!.data, { kind: "vocal-separations", id, status: "error", progress: 40 });
    const got = await h.app.inject({ method: "GET", url: `/api/kits/v1/vocal-separations/${id}`, headers: caller.auth });
    assert.deepEqual(stream.events[4]!.data, got.json(), "the final record is what the GET answers");
    await waitForSubscribers(0);
  });

  test("a reconnect with Last-Event-ID gets the status now, the record once; after the record it is told 204", async () => {
    const caller = await h.newCaller();
    const id = await createSeparation(caller);
    const url = `${base}/vocal-separations/${id}/events`;
    const first = follow(url, caller.key);
    await first.until(isStatus("running", 0));
    first.stop();
    await first.done;
    await waitForSubscribers(0);

    // Missed while away: the start and some progress.
    await tables.separation.markStarted(id, true);
    await tables.separation.setProgress(id, 30);
    const second = follow(url, caller.key, first.events.at(-1)!.id);
    const now = await second.until(() => true);
    assert.deepEqual(now.data, { kind: "vocal-separations", id, status: "running", progress: 30 });
    await tables.separation.cancel(id);
    await second.done;
    const record = second.events.at(-1)!;
    assert.equal(record.event, "record");
    assert.equal((record.data as { status: string }).status, "cancelled");

    const res = await fetch(url, { headers: { ...caller.auth, "last-event-id": record.id } });
    assert.equal(res.status, 204, "the final record is not sent again");
    const third = follow(url, caller.key, now.id);
    await third.done;
    assert.deepEqual(
      third.events.map((e) => e.event),
      ["status", "record"],
      "a client that missed the end gets it",
    );
    await waitForSubscribers(0);
  });

  test("404 for another caller's job, and for an unknown id, leaving no subscription", async () => {
    const owner = await h.newCaller();
    const other = await h.newCaller();
    const id = await createSeparation(owner);
    for (const [key, url] of [
      [other.key, `${base}/vocal-separations/${id}/events`],
      [owner.key, `${base}/stem-splits/${id}/events`],
      [owner.key, `${base}/vocal-separations/2147483647/events`],
    ] as const) {
      const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(res.status, 404, url);
      assert.match(((await res.json()) as { message: string }).message, /not found/);
    }
    const anonymous = await fetch(`${base}/vocal-separations/${id}/events`);
    assert.equal(anonymous.status, 401);
    await assert.rejects(
      async () => {
        for await (const _ of openEventStream(`${base}/vocal-separations/${id}/events`, { apiKey: other.key }));
      },
      (error: unknown) => error instanceof EventStreamRefused && error.status === 404,
    );
    assert.equal(h.app.ctx.jobEvents.subscriberCount, 0);
  });

  test("an end whose event was lost while Redis restarted still reaches the stream once the API's connection is back", async () => {
    const caller = await h.newCaller();
    const id = await createSeparation(caller);
    const stream = follow(`${base}/vocal-separations/${id}/events`, caller.key);
    await stream.until(isStatus("running", 0));
    // Ended without its event, as a worker's end is while Redis is away (its append fails).
    await h.prisma.separationJob.update({
      where: { id },
      data: { status: "error", errorMessage: "lost", jobEndTime: new Date() },
    });
    await h.stack.redis.restart();
    await stream.done;
    assert.deepEqual(
      stream.events.map((e) => e.event),
      ["status", "status", "record"],
    );
    assert.deepEqual(stream.events[1]!.data, { kind: "vocal-separations", id, status: "error", progress: 0 });
    assert.equal((stream.events[2]!.data as { errorMessage: string }).errorMessage, "lost");
    await waitForSubscribers(0);
  });

  test("a stream asked for while Redis is away is answered 503 with Retry-After, at once; once it is back streams open again", async () => {
    const caller = await h.newCaller();
    const id = await createSeparation(caller);
    await h.stack.redis.halt();
    try {
      for (const url of [`${base}/vocal-separations/${id}/events`, `${base}/events`]) {
        const started = performance.now();
        const res = await fetch(url, { headers: caller.auth, signal: AbortSignal.timeout(20_000) });
        const body = (await res.json()) as { statusCode: number; message: string };
        assert.equal(res.status, 503, `${url}: ${JSON.stringify(body)}`);
        assert.equal(res.headers.get("retry-after"), "5");
        assert.equal(body.statusCode, 503);
        assert.match(body.message, /Redis/);
        assert.ok(performance.now() - started < 10_000, `${url} answered after ${Math.round(performance.now() - started)} ms`);
      }
      assert.equal(h.app.ctx.jobEvents.subscriberCount, 0);
    } finally {
      await h.stack.redis.resume();
    }
    const stream = follow(`${base}/vocal-separations/${id}/events`, caller.key);
    await stream.until(isStatus("running", 0));
    stream.stop();
    await stream.done;
    await waitForSubscribers(0);
  });

  test("a client that goes away frees its subscription; the stream sends retry and heartbeats", async () => {
    const caller = await h.newCaller();
    const id = await createSeparation(caller);
    const res = await fetch(`${base}/vocal-separations/${id}/events`, { headers: caller.auth });
    assert.equal(res.headers.get("content-type"), "text/event-stream; charset=utf-8");
    assert.equal(res.headers.get("x-accel-buffering"), "no");
    assert.match(res.headers.get("cache-control") ?? "", /no-cache/);
    const reader = res.body!.getReader();
    let text = "";
    const deadline = Date.now() + 5_000;
    while (!text.includes(": heartbeat") && Date.now() < deadline) text += new TextDecoder().decode((await reader.read()).value);
    assert.match(text, /^retry: 1500\n\n/);
    assert.match(text, /: heartbeat\n\n/, "a heartbeat within JOB_EVENTS_HEARTBEAT_SECONDS");
    assert.equal(h.app.ctx.jobEvents.subscriberCount, 1);
    await reader.cancel();
    await waitForSubscribers(0);
  });
});

describe("the caller's event stream", () => {
  test("sends every change of the caller's jobs of every kind, none of another caller's, and replays what a reconnect missed", async () => {
    const caller = await h.newCaller();
    const other = await h.newCaller();
    const vocal = await createSeparation(caller, "vocal-separations");
    const stems = await createSeparation(caller, "stem-splits");
    const foreign = await createSeparation(other, "vocal-separations");
    const stream = follow(`${base}/events`, caller.key);
    const ready = await stream.until((e) => e.event === "ready");

    await tables.separation.markStarted(foreign, true);
    await tables.separation.markStarted(vocal, true);
    await tables.separation.setProgress(stems, 20);
    await stream.until(isStatus("running", 20));
    stream.stop();
    await stream.done;
    await waitForSubscribers(0);
    const statuses = stream.events.filter((e) => e.event === "status").map((e) => e.data);
    assert.deepEqual(statuses, [
      { kind: "vocal-separations", id: vocal, status: "running", progress: 1 },
      { kind: "stem-splits", id: stems, status: "running", progress: 20 },
    ]);
    assert.ok(
      stream.events.every((e) => e === ready || compareStreamIds(e.id, ready.id) > 0),
      "events come after the ready event",
    );

    // Away: two changes of its own, one of another caller's.
    await tables.separation.setProgress(vocal, 50);
    await tables.separation.complete(vocal, {
      vocalKey: null,
      lossyVocalKey: null,
      backingKey: null,
      stems: [],
      lossyStems: [],
      models: ["vocals"],
    });
    await tables.separation.setProgress(foreign, 60);
    const resumed = follow(`${base}/events`, caller.key, stream.events.at(-1)!.id);
    await resumed.until((e) => e.event === "ready");
    assert.deepEqual(
      resumed.events.filter((e) => e.event === "status").map((e) => e.data),
      [
        { kind: "vocal-separations", id: vocal, status: "running", progress: 50 },
        { kind: "vocal-separations", id: vocal, status: "success", progress: 100 },
      ],
    );
    resumed.stop();
    await resumed.done;

    const stale = follow(`${base}/events`, caller.key, "1-0");
    await stale.until((e) => e.event === "ready");
    assert.ok(
      stale.events.some((e) => e.event === "resync"),
      "told to read the lists again when the events it missed are gone",
    );
    stale.stop();
    await stale.done;
    await waitForSubscribers(0);
  });

  test("500 open streams each get the change at once, and closing them frees every subscription", async () => {
    const caller = await h.newCaller();
    const id = await createSeparation(caller);
    const streams = Array.from({ length: 500 }, () => follow(`${base}/events`, caller.key));
    await Promise.all(streams.map((s) => s.until((e) => e.event === "ready", 30_000)));
    assert.equal(h.app.ctx.jobEvents.subscriberCount, 500);
    const written = performance.now();
    await tables.separation.setProgress(id, 10);
    const arrivals = await Promise.all(streams.map((s) => s.until(isStatus("running", 10), 30_000)));
    const slowest = Math.max(...arrivals.map((e) => (e as { at: number }).at - written));
    assert.ok(slowest < 5_000, `the last of 500 streams got the event ${Math.round(slowest)} ms after the write`);
    for (const s of streams) s.stop();
    await Promise.all(streams.map((s) => s.done));
    await waitForSubscribers(0);
  });

  test("a client that stops reading is cut off once JOB_EVENTS_MAX_PENDING events wait for it, and its subscription freed", async (t) => {
    const caller = await h.newCaller();
    const { port } = new URL(base);
    const socket = connect(Number(port), "127.0.0.1");
    socket.write(`GET /api/kits/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${caller.key}\r\n\r\n`);
    socket.on("error", () => undefined);
    await waitForSubscribers(1);
    // Reads nothing from here on: the kernel's buffers fill, then the stream's own wait.
    socket.pause();
    let published = 0;
    while (h.app.ctx.jobEvents.subscriberCount > 0 && published < 400_000) {
      // A thousand changes of a thousand different jobs (each waits on its own), as workers append them.
      await Promise.all(
        Array.from({ length: 1000 }, (_, i) =>
          h.app.ctx.jobEvents.log.publish({
            recordKind: "tts",
            rowId: i + 1,
            callerId: caller.callerId,
            status: "running",
            progress: published % 99,
          }),
        ),
      );
      published += 1000;
      await sleep(5);
    }
    await waitForSubscribers(0);
    socket.destroy();
    t.diagnostic(`cut off after ${published} changes were appended`);
    assert.ok(published < 400_000, "the stream was closed");
  });
});
