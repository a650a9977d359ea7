import type { IncomingMessage } from "node:http";
import type { FastifyInstance } from "fastify";

/**
 * A request answered 413 while its client is still sending the body: Fastify closes the connection
 * after the answer, and a socket closed with unread data in it is reset, so a client that writes
 * its whole body before it reads (Node's fetch, most libraries) fails on EPIPE or ECONNRESET and
 * never sees the 413. As web servers' lingering close does, the rest of the body is read and
 * thrown away first, at most `maxBytes` and `maxMs` (a client that sends more, or slower, is cut
 * off as before), then the 413 is sent and the connection closed.
 */
export function installLingeringClose(app: FastifyInstance, options: { maxBytes: number; maxMs: number }): void {
  app.addHook("onSend", async (request, reply, payload) => {
    // `readableEnded` too: a body that was all read (an injected request has no `complete`) has nothing left to drain.
    if (reply.statusCode === 413 && !request.raw.complete && !request.raw.readableEnded && !request.raw.destroyed) {
      reply.header("connection", "close");
      await discardRest(request.raw, options.maxBytes, options.maxMs);
    }
    return payload;
  });
}

/** Reads and drops what is left of a request's body; resolves at its end, or at the first bound reached. */
function discardRest(request: IncomingMessage, maxBytes: number, maxMs: number): Promise<void> {
  return new Promise((resolve) => {
    let read = 0;
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (read > maxBytes) done();
    };
    const done = () => {
      clearTimeout(timer);
      request.off("data", onData).off("end", done).off("error", done).off("close", done);
      resolve();
    };
    const timer = setTimeout(done, maxMs);
    request.on("data", onData).once("end", done).once("error", done).once("close", done);
    request.resume();
  });
}
