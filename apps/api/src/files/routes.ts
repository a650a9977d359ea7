import type { Readable } from "node:stream";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { contentTypeForKey, InvalidKeyError, verifyFileSignature, type LocalDiskStorage } from "@mixdown/storage";
import { Type } from "typebox";
import { ApiError, forbidden, notFound } from "../http/errors.ts";
import { alwaysSent, errorResponses } from "../http/schemas.ts";

/** A stored file's bytes, streamed as they are (typed as the stream the handler sends). */
const FileBytes = Type.Unsafe<Readable>({ type: "string", format: "binary" });

const AcceptRanges = alwaysSent(
  Type.Literal("bytes", { description: "A single byte range may be asked for (`Range: bytes=<first>-<last>`)" }),
);
const ContentLength = alwaysSent(Type.Integer({ minimum: 0, description: "The bytes in this answer" }));

/** `bytes=a-b`, `bytes=a-`, `bytes=-n` (one range) → inclusive [start, end], or "unsatisfiable". */
export function parseRange(header: string, size: number): { start: number; end: number } | "unsatisfiable" | null {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null;
  let start: number;
  let end: number;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0) return "unsatisfiable";
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return "unsatisfiable";
  return { start, end };
}

/**
 * `GET /files/<key>?expires=&signature=`: downloads for the local-disk backend. No bearer auth:
 * the HMAC signature over key and expiry is the credential (403 when wrong or expired).
 * Supports single byte ranges.
 */
export const fileRoutes: FastifyPluginAsyncTypebox<{ storage: LocalDiskStorage; secret: string }> = async (
  app,
  { storage, secret },
) => {
  app.get(
    "/files/*",
    {
      schema: {
        tags: ["Files"],
        operationId: "downloadFile",
        summary: "Download a stored file through a signed URL (local-disk storage)",
        description:
          "The URLs a record carries when the service stores files on local disk. The path is the file's key, slashes included; `expires` and `signature` (an HMAC over key and expiry) are the credential, so no Authorization header (403 when wrong or expired). A single byte range is served (206, 416 when unsatisfiable).",
        security: [],
        querystring: Type.Object({ expires: Type.Optional(Type.String()), signature: Type.Optional(Type.String()) }),
        response: {
          200: {
            description: "The file",
            headers: { "Accept-Ranges": AcceptRanges, "Content-Length": ContentLength },
            content: { "*/*": { schema: FileBytes } },
          },
          206: {
            description: "The byte range asked for",
            headers: {
              "Content-Range": alwaysSent(
                Type.String({ pattern: "^bytes \\d+-\\d+/\\d+$", description: "`bytes <first>-<last>/<size>`" }),
              ),
              "Accept-Ranges": AcceptRanges,
              "Content-Length": ContentLength,
            },
            content: { "*/*": { schema: FileBytes } },
          },
          ...errorResponses(403, 404),
          416: {
            description: "The range asked for is outside the file",
            headers: {
              "Content-Range": alwaysSent(
                Type.String({ pattern: "^bytes \\*/\\d+$", description: "`bytes */<size>`: the file's size" }),
              ),
            },
            content: { "application/json": { schema: Type.Ref("Error") } },
          },
        },
      },
    },
    async (request, reply) => {
      const key = (request.params as { "*": string })["*"];
      const check = verifyFileSignature(secret, key, request.query.expires, request.query.signature);
      if (check === "invalid") throw forbidden("invalid signature for this file URL");
      if (check === "expired") throw forbidden("this file URL has expired; fetch the record again for a fresh one");
      let info;
      try {
        info = await storage.stat(key);
      } catch (error) {
        if (error instanceof InvalidKeyError) throw notFound("file not found");
        throw error;
      }
      if (!info) throw notFound("file not found");
      const rangeHeader = request.headers.range;
      const range = rangeHeader ? parseRange(rangeHeader, info.size) : null;
      if (range === "unsatisfiable") {
        throw new ApiError(416, `range ${rangeHeader} is outside the file (${info.size} bytes)`, {
          "content-range": `bytes */${info.size}`,
        });
      }
      reply.header("content-type", contentTypeForKey(key));
      reply.header("accept-ranges", "bytes");
      reply.header("cache-control", "private, max-age=60");
      if (range) {
        reply.code(206);
        reply.header("content-range", `bytes ${range.start}-${range.end}/${info.size}`);
        reply.header("content-length", String(range.end - range.start + 1));
        return reply.send(await storage.getRangeStream(key, range.start, range.end));
      }
      reply.header("content-length", String(info.size));
      return reply.send(await storage.getStream(key));
    },
  );
};
