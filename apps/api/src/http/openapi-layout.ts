import type { SwaggerTransformObject } from "@fastify/swagger";
import { Type } from "typebox";
import { errorResponses, SENT_ON_EVERY_ANSWER } from "./schemas.ts";

/**
 * The OpenAPI document's tags, declared and described in the order a reader meets them (every
 * operation's tag is one of these; the linters' `operation-tag-defined` rule checks it).
 */
export const OPENAPI_TAGS = [
  {
    name: "Vocal separations",
    description: "Split a song into its vocal and its backing (and the vocal's lead, harmony and reverb).",
  },
  { name: "Stem splits", description: "Split a song into stems (vocals, drums, bass, other)." },
  {
    name: "Batches",
    description: "Many files at once: a job per file, the batch's progress, and one zip of every output.",
  },
  { name: "Separation models", description: "The separation models installed, and the catalogue of those that can be." },
  {
    name: "Model installs",
    description: "Installs of catalogue models on the server, run by the workers (operator keys only).",
  },
  { name: "Voice conversions", description: "Sing or speak a recording again in the voice of a voice model." },
  { name: "Text to speech", description: "Speak a text in the voice of a voice model." },
  { name: "Voice blender", description: "Blend two to four voice models into a new one." },
  {
    name: "Audio analyses",
    description: "Find a song's key and scale, tempo and beats (Essentia) and loudness (EBU R128).",
  },
  {
    name: "Vocal repairs",
    description: "Remove noise (RNNoise) and room reverb (the vocal split) from a vocal, or from a mix's vocal.",
  },
  {
    name: "Masterings",
    description: "Master a track to a reference track (Matchering) or to a loudness target (EBU R128, ffmpeg's loudnorm).",
  },
  {
    name: "Harmonies",
    description: "Add a harmony voice a third or a sixth above or below a vocal, in key, note by note.",
  },
  {
    name: "Pipelines",
    description:
      "Chain steps (separate, repair, convert, recombine, master) on one input, each run as an ordinary job; presets for the common chains.",
  },
  {
    name: "Voice models",
    description: "The public catalogue of voice models and the caller's own: imports, uploads, their media.",
  },
  {
    name: "Events",
    description:
      "Server-Sent Events: every status and progress change of the caller's jobs as it happens (each kind's own stream is beside its GET).",
  },
  { name: "Usage", description: "Seconds of audio and jobs per API key and month, and the key's monthly quota." },
  { name: "Files", description: "Signed downloads of stored files when the service keeps them on local disk." },
  { name: "Health", description: "Liveness and readiness probes, without authentication." },
  { name: "Metrics", description: "Prometheus metrics." },
  { name: "Dashboard", description: "What the web dashboard served at / uses besides the Kits API." },
];

/** Relative: the document is served by the API it describes, wherever that is. */
export const OPENAPI_SERVERS = [{ url: "/", description: "The server serving this document" }];

/**
 * A route as the document shows it. Fastify's wildcard (`/files/*`) would become `/files/{*}`,
 * not a valid path template: it is documented as the path parameter `key` it is. An operation that
 * takes an API key declares the 503 (with `Retry-After`) it answers while the database is away:
 * the key is looked up there (a key seen in the last few seconds aside), whatever the route does.
 */
export function documentedRoute<S extends object | undefined>({ schema, url }: { schema: S; url: string }) {
  const withOutage = takesApiKey(schema) ? { ...schema, response: { ...errorResponses(503), ...schema.response } } : schema;
  if (!url.endsWith("/*") || !withOutage) return { schema: withOutage, url };
  const key = Type.String({ description: "The stored file's key, slashes included, as the record's URL has it" });
  return { url: url.replace(/\*$/, ":key"), schema: { ...withOutage, params: Type.Object({ key }) } };
}

function takesApiKey(schema: object | undefined): schema is { security: object[]; response?: Record<number, unknown> } {
  const security = (schema as { security?: unknown } | undefined)?.security;
  return Array.isArray(security) && security.some((s) => typeof s === "object" && s !== null && "bearerAuth" in s);
}

type DocumentObject = {
  paths?: Record<string, Record<string, { responses?: Record<string, { headers?: Record<string, ResponseHeader> }> }>>;
};
type ResponseHeader = { required?: boolean; schema?: Record<string, unknown> };

/**
 * The document as served: a response header marked `alwaysSent` (http/schemas.ts) becomes
 * `required: true` on its header object, where OpenAPI keeps it (the route schemas can only carry
 * the header's schema).
 */
export const documentedObject: SwaggerTransformObject = (document) => {
  const object = "openapiObject" in document ? document.openapiObject : document.swaggerObject;
  for (const operations of Object.values((object as DocumentObject).paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const response of Object.values(operation.responses ?? {})) {
        for (const header of Object.values(response.headers ?? {})) {
          if (header.schema?.[SENT_ON_EVERY_ANSWER] !== true) continue;
          delete header.schema[SENT_ON_EVERY_ANSWER];
          header.required = true;
        }
      }
    }
  }
  return object;
};
