import type { FastifySchemaCompiler } from "fastify";
import type { TObject } from "typebox";
import { FIELD_FILE_MAX_BYTES } from "../uploads/receive-form.ts";

/**
 * Multipart bodies are streamed by the handler, not parsed up front: their route schema only
 * documents the form in OpenAPI, and this compiler keeps it from being applied to the
 * (absent) parsed body. The handler validates each part itself.
 */
export const documentOnly: FastifySchemaCompiler<unknown> = () => () => true;

/**
 * The text (non-file) parts a multipart route's documented body declares: file parts are
 * `format: "binary"` strings. Lets the form reader know which names are scalar fields from the
 * same schema that documents the route.
 */
export function textFieldsOf(body: TObject): string[] {
  return Object.entries(body.properties)
    .filter(([, schema]) => (schema as { format?: unknown }).format !== "binary")
    .map(([name]) => name);
}

/** What every multipart route's OpenAPI description says about text parts sent as files. */
export const TEXT_PARTS_AS_FILES = `Text parts may also be sent as file parts (as Python requests' \`files=\` and curl's \`-F name=@file\` do): up to ${FIELD_FILE_MAX_BYTES / 1024} KB of UTF-8 text each, read as the field's value.`;
