import { Type } from "typebox";

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
  { name: "Separation models", description: "The separation models installed, and the catalogue of those that can be." },
  {
    name: "Model installs",
    description: "Installs of catalogue models on the server, run by the workers (operator keys only).",
  },
  { name: "Voice conversions", description: "Sing or speak a recording again in the voice of a voice model." },
  { name: "Text to speech", description: "Speak a text in the voice of a voice model." },
  { name: "Voice blender", description: "Blend two to four voice models into a new one." },
  {
    name: "Voice models",
    description: "The public catalogue of voice models and the caller's own: imports, uploads, their media.",
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
 * not a valid path template: it is documented as the path parameter `key` it is.
 */
export function documentedRoute<S extends object | undefined>({ schema, url }: { schema: S; url: string }) {
  if (!url.endsWith("/*") || !schema) return { schema, url };
  const key = Type.String({ description: "The stored file's key, slashes included, as the record's URL has it" });
  return { url: url.replace(/\*$/, ":key"), schema: { ...schema, params: Type.Object({ key }) } };
}
