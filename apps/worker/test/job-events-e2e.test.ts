import assert from "node:assert/strict";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { openEventStream, type JobStatusEvent, type StreamEvent } from "@mixdown/kits-client";
import { makeSong, startDeployment, upload, type Deployment } from "../testing/harness.ts";

/**
 * A reverse proxy that passes every chunk on as it comes and buffers nothing (as nginx does with
 * `X-Accel-Buffering: no`): what reaches the client through it arrives when the API sent it.
 */
function startPassThroughProxy(target: string): Promise<Server & { url: string }> {
  const to = new URL(target);
  const server = createServer((req, res) => {
    const upstream = httpRequest(
      { host: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.on("data", (chunk: Buffer) => res.write(chunk));
        answer.on("end", () => res.end());
      },
    );
    upstream.on("error", () => res.destroy());
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve(Object.assign(server, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })),
    ),
  );
}

describe("a real job's events, through a proxy that buffers nothing", () => {
  let d: Deployment;
  let proxy: Server & { url: string };
  before(async () => {
    d = await startDeployment();
    proxy = await startPassThroughProxy(d.baseUrl);
  });
  after(async () => {
    proxy?.closeAllConnections();
    await new Promise((resolve) => proxy?.close(resolve));
    await d?.stop();
  });

  it("arrive as the worker writes them: the start and progress well before the end, then the record the GET answers", async (t) => {
    const song = await makeSong("events-song.wav", 20);
    const events: Array<StreamEvent & { at: number }> = [];
    const callerEvents: Array<StreamEvent & { at: number }> = [];
    const everything = new AbortController();
    let ready = () => {};
    const following = new Promise<void>((resolve) => (ready = resolve));
    const callerStream = (async () => {
      for await (const event of openEventStream(`${proxy.url}/api/kits/v1/events`, {
        apiKey: d.key,
        signal: everything.signal,
      })) {
        callerEvents.push({ ...event, at: performance.now() });
        if (event.event === "ready") ready();
      }
    })().catch((error: unknown) => {
      if (!everything.signal.aborted) throw error;
    });
    await following;
    const created = await upload(d, song, "vocal-separations");
    assert.equal(created.status, 200, await created.clone().text());
    const { id } = (await created.json()) as { id: number };

    for await (const event of openEventStream(`${proxy.url}/api/kits/v1/vocal-separations/${id}/events`, { apiKey: d.key }))
      events.push({ ...event, at: performance.now() });

    const record = events.at(-1)!;
    assert.equal(record.event, "record");
    assert.equal((record.data as { status: string }).status, "success", JSON.stringify(record.data));
    const statuses = events
      .filter((e) => e.event === "status")
      .map((e) => e as StreamEvent & { at: number; data: JobStatusEvent });
    const progress = statuses.map((e) => e.data.progress);
    assert.deepEqual(
      progress,
      [...progress].sort((a, b) => a - b),
      "progress only rises",
    );
    assert.ok(statuses.length >= 4, `start, progress and end: ${JSON.stringify(progress)}`);
    assert.equal(statuses.at(-1)!.data.status, "success");
    const working = statuses.filter((e) => e.data.status === "running" && e.data.progress > 1);
    assert.ok(working.length >= 2, `progress while it runs: ${JSON.stringify(progress)}`);
    // Pushed as it happens: the first progress came long before the end (a buffering proxy
    // would deliver them all at the end, together).
    const lead = record.at - working[0]!.at;
    const spread = working.at(-1)!.at - working[0]!.at;
    t.diagnostic(
      `${statuses.length} status events; the first progress ${Math.round(lead)} ms before the record, progress spread over ${Math.round(spread)} ms`,
    );
    assert.ok(
      lead > 1_000 && spread > 500,
      `progress ${Math.round(lead)} ms before the record, spread over ${Math.round(spread)} ms`,
    );

    const got = await fetch(`${d.baseUrl}/api/kits/v1/vocal-separations/${id}`, {
      headers: { authorization: `Bearer ${d.key}` },
    });
    // Signed URLs are signed again on each read; the rest is the same.
    const unsigned = (value: unknown) => JSON.parse(JSON.stringify(value).replace(/\?[^"]*/g, "?"));
    assert.deepEqual(unsigned(record.data), unsigned(await got.json()), "the final record is what the GET answers");

    // The caller's stream saw the same changes, at the same moments.
    const deadline = Date.now() + 5_000;
    while (!callerEvents.some((e) => (e.data as JobStatusEvent).status === "success") && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    everything.abort();
    await callerStream;
    const seen = callerEvents.filter((e) => e.event === "status").map((e) => e.data as JobStatusEvent);
    assert.ok(seen.every((e) => e.kind === "vocal-separations" && e.id === id));
    assert.equal(seen[0]?.progress, 1, "the caller's stream saw the start");
    assert.deepEqual(
      seen.slice(seen.length - (progress.length - 1)).map((e) => e.progress),
      progress.slice(1),
      "and every change the job's stream saw after its first status",
    );
  });
});
