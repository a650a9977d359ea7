import { Type, type Static, type TObject, type TSchema } from "typebox";
import { Compile } from "typebox/compile";
import type { ReceivedFile, ReceivedForm } from "../uploads/receive-form.ts";
import { unprocessable } from "./errors.ts";
import { fieldsOfBody } from "./plain-form.ts";

/**
 * A file part of a form: documented as OpenAPI's `{ type: string, format: binary }`, typed as
 * the file the form reader stored, so that a form schema says which of its fields are files.
 */
export const FilePart = (description: string) => Type.Unsafe<ReceivedFile>(Type.String({ format: "binary", description }));

/** What a failed field's message is built from. */
export interface FieldFailure {
  name: string;
  /** The text the client sent (absent for a missing field). */
  raw?: string;
  /** The JSON schema keyword that failed: required, type, minimum, maximum, minLength, maxLength, enum, ... */
  keyword: string;
  schema: FieldSchema;
}

/** A kind's own wording of a field's failures, by keyword (the other keywords keep the house's wording). */
export type FieldMessages = Partial<Record<string, (failure: FieldFailure) => string>>;

interface FieldSchema {
  type?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  enum?: unknown[];
}

const INT32_MAX = 2147483647;
const codePoints = (text: string) => [...text].length;
const range = (s: FieldSchema) => `between ${s.minimum} and ${s.maximum}`;

/**
 * The house's wording of a form field's failure, the one Kits clients have always read from the
 * multipart creates: it names the field, the rule and what was sent.
 */
export function describeFieldFailure({ name, raw, keyword, schema }: FieldFailure): string {
  if (keyword === "required") return `${name} is required`;
  const sent = raw ?? "";
  if (schema.type === "integer") {
    // An id: the only integers forms take are row ids, 1 to 2^31 - 1.
    if ((schema.minimum ?? 0) >= 1 && (schema.maximum ?? INT32_MAX) <= INT32_MAX)
      return `${name} must be a positive integer (got ${JSON.stringify(sent.trim())})`;
    return keyword === "type"
      ? `${name} must be an integer (got ${JSON.stringify(sent.trim())})`
      : `${name} must be ${range(schema)} (got ${sent.trim()})`;
  }
  if (schema.type === "number") {
    const bounded = schema.minimum !== undefined && schema.maximum !== undefined;
    if (keyword === "type") return `${name} must be a number${bounded ? ` ${range(schema)}` : ""} (got ${JSON.stringify(sent)})`;
    if (bounded) return `${name} must be ${range(schema)} (got ${Number(sent.trim())})`;
    return keyword === "minimum"
      ? `${name} must be at least ${schema.minimum} (got ${Number(sent.trim())})`
      : `${name} must be at most ${schema.maximum} (got ${Number(sent.trim())})`;
  }
  if (keyword === "enum") return `${name} must be one of ${(schema.enum ?? []).join(", ")} (got ${JSON.stringify(sent)})`;
  if (keyword === "minLength") return `${name} must be at least ${schema.minLength} characters long`;
  if (keyword === "maxLength")
    return `${name} is ${codePoints(sent)} characters long; the limit is ${schema.maxLength} characters`;
  return `${name} is invalid (${keyword})`;
}

/** The text as the field's declared type: a number from its digits, text as it is; null when it is not one. */
function convert(schema: FieldSchema, raw: string): unknown {
  const text = raw.trim();
  if (schema.type === "integer") return /^-?\d{1,16}$/.test(text) ? Number(text) : null;
  if (schema.type === "number") {
    const value = Number(text);
    return text !== "" && Number.isFinite(value) ? value : null;
  }
  if (schema.type === "boolean") return text === "true" ? true : text === "false" ? false : null;
  return raw;
}

interface Field {
  name: string;
  schema: FieldSchema;
  required: boolean;
  file: boolean;
  check: ReturnType<typeof Compile>;
}

/**
 * A create's form, validated by the schema its route declares (the one the OpenAPI document
 * shows): each text field converted to its declared type and checked against every constraint the
 * schema states, each required file part present. Fields are checked in the schema's order, text
 * fields before file parts; the first failure is a 422 naming the field (describeFieldFailure,
 * or the kind's own wording in `messages`). An empty text field of a number or a choice counts as
 * absent (its default applies), as an unfilled form input is sent.
 *
 * Multipart bodies are streamed to disk before they can be read, so Fastify's own validator does
 * not see them (`documentOnly`); urlencoded and JSON bodies of the same routes arrive here as the
 * same text fields (`fieldsOfBody`), and so meet the same rules.
 */
export class FormSchema<S extends TObject> {
  readonly #fields: Field[];
  readonly #messages: Partial<Record<string, FieldMessages>>;

  constructor(
    readonly body: S,
    messages: { [K in keyof S["properties"]]?: FieldMessages } = {},
  ) {
    const required = new Set<string>(body.required ?? []);
    const fields = Object.entries(body.properties).map(([name, schema]) => ({
      name,
      schema: schema as FieldSchema,
      required: required.has(name),
      file: (schema as FieldSchema).format === "binary",
      // A string's `format` (a link's `uri`) documents it: the kind's own rules for links
      // (jobOrigin's webhookUrl, a model's modelUrl) decide, as they always have, and take what a
      // browser would (an IRI, a space) that the strict RFC 3986 check refuses.
      check: Compile({ ...(schema as TSchema), format: undefined } as TSchema),
    }));
    this.#fields = [...fields.filter((f) => !f.file), ...fields.filter((f) => f.file)];
    this.#messages = messages as Partial<Record<string, FieldMessages>>;
  }

  /** The names of its text fields: what the form reader collects as text (also from small file parts). */
  get textFields(): string[] {
    return this.#fields.filter((f) => !f.file).map((f) => f.name);
  }

  /** Its text fields of a number type: a JSON body may give them as numbers (`fieldsOfBody`). */
  get numericFields(): string[] {
    return this.#fields.filter((f) => f.schema.type === "integer" || f.schema.type === "number").map((f) => f.name);
  }

  /** A urlencoded or JSON body's text fields, as a multipart form's would be (`fieldsOfBody`), ready for `read`. */
  fieldsOf(body: unknown): Map<string, string> {
    return fieldsOfBody(body, this.textFields, this.numericFields);
  }

  /** The form's values, typed by the schema: text converted and checked, file parts as stored. */
  read(form: Pick<ReceivedForm, "fields"> & { files?: ReadonlyMap<string, ReceivedFile> }): Static<S> {
    const values: Record<string, unknown> = {};
    for (const field of this.#fields) {
      if (field.file) {
        const file = form.files?.get(field.name);
        if (file) values[field.name] = file;
        else if (field.required) this.#fail(field, "required");
        continue;
      }
      const raw = form.fields.get(field.name);
      // An unfilled input: absent, or blank where the field is a number or a choice.
      const choice = field.schema.type !== "string" || field.schema.enum !== undefined;
      if (raw === undefined || (choice && raw.trim() === "")) {
        if (field.required) this.#fail(field, "required", raw);
        continue;
      }
      const value = convert(field.schema, raw);
      if (value === null) this.#fail(field, "type", raw);
      const error = field.check.Errors(value)[0];
      if (error) this.#fail(field, error.keyword, raw);
      values[field.name] = value;
    }
    return values as Static<S>;
  }

  #fail(field: Field, keyword: string, raw?: string): never {
    const failure: FieldFailure = { name: field.name, raw, keyword, schema: field.schema };
    const own = this.#messages[field.name]?.[keyword];
    throw unprocessable(own ? own(failure) : describeFieldFailure(failure));
  }
}
