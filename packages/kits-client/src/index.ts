import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { paths, SeparationJob } from "./schema.ts";

export type * from "./schema.ts";
export * from "./controls.ts";
export * from "./events.ts";

/** A job's status, as every job record has it. */
export type JobStatus = SeparationJob["status"];

export type KitsClient = Client<paths>;

export interface KitsClientOptions extends Omit<ClientOptions, "baseUrl"> {
  /** Where the service answers, e.g. `http://127.0.0.1:8080` (paths carry `/api/kits/v1`); empty: this page's origin. */
  baseUrl?: string;
  /** The API key sent as `Authorization: Bearer <key>`; a function is asked on every request (a key that changes). */
  apiKey?: string | (() => string | null | undefined);
}

/**
 * A client whose paths, parameters, bodies and answers are typed from the API's OpenAPI
 * document, e.g. `client.GET("/api/kits/v1/voice-models", { params: { query: { myModels: true } } })`.
 * Multipart creates take `{ body, bodySerializer: formData }`.
 */
export function createKitsClient(options: KitsClientOptions = {}): KitsClient {
  const { apiKey, baseUrl = "", ...rest } = options;
  const client = createClient<paths>({ baseUrl, ...rest });
  client.use({
    onRequest({ request }) {
      const key = typeof apiKey === "function" ? apiKey() : apiKey;
      if (key) request.headers.set("authorization", `Bearer ${key}`);
      return request;
    },
  });
  return client;
}

/**
 * A multipart body from an object of form fields: files as they are (an array of files: one part
 * each under the same name, as a batch's `files`), numbers as text, undefined left out.
 */
export function formData(body: unknown): FormData {
  const form = new FormData();
  const appendFile = (name: string, file: Blob) => form.append(name, file, file instanceof File ? file.name : name);
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
    if (value === undefined || value === null) continue;
    if (value instanceof Blob) appendFile(name, value);
    else if (Array.isArray(value) && value.length > 0 && value.every((v) => v instanceof Blob))
      for (const file of value) appendFile(name, file);
    // a list of text values (a batch's `urls`): one field each, as the form takes them
    else if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === "string"))
      for (const text of value) form.append(name, text);
    else form.append(name, typeof value === "object" ? JSON.stringify(value) : String(value));
  }
  return form;
}
