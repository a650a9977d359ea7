import type { FastifyInstance } from "fastify";
import { badRequest, unprocessable } from "./errors.ts";

/**
 * Lets the plugin's routes read `application/x-www-form-urlencoded` bodies (what `curl -d`, an
 * HTML form and Python requests' `data={...}` send) as an object of their fields, the first value
 * of each name kept (every one, a line each, of a name in `repeated`), up to `bodyLimit` bytes. A create whose fields are all text accepts them.
 */
export function acceptUrlencodedForms(app: FastifyInstance, bodyLimit: number, repeated: readonly string[] = []): void {
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit }, (_request, body, done) => {
    const fields: Record<string, string> = {};
    for (const [name, value] of new URLSearchParams(body as string)) {
      // a `repeated` name (a batch's `urls`) keeps every value, one per line, as a multipart form does
      if (!(name in fields)) fields[name] = value;
      else if (repeated.includes(name)) fields[name] += `\n${value}`;
    }
    done(null, fields);
  });
}

/**
 * The fields of a urlencoded or JSON body as text, as a multipart form's parts are: other names
 * are ignored; a JSON number is accepted where `numeric` names the field.
 */
export function fieldsOfBody(body: unknown, names: readonly string[], numeric: readonly string[] = []): Map<string, string> {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw badRequest("request body must be a form (multipart/form-data or application/x-www-form-urlencoded) or a JSON object");
  const fields = new Map<string, string>();
  for (const name of names) {
    const value = (body as Record<string, unknown>)[name];
    if (value === undefined || value === null) continue;
    if (typeof value === "string") fields.set(name, value);
    else if (numeric.includes(name) && typeof value === "number" && Number.isFinite(value)) fields.set(name, String(value));
    else throw unprocessable(`${name} must be a string${numeric.includes(name) ? " or a number" : ""}`);
  }
  return fields;
}
