import type { FastifySchemaCompiler } from "fastify";
import { FIELD_FILE_MAX_BYTES } from "../uploads/receive-form.ts";

/**
 * Multipart bodies are streamed by the handler, not parsed up front: this compiler keeps
 * Fastify from applying the route's schema to the (absent) parsed body. The same schema is
 * applied once the form is read, by the route's FormSchema (form-schema.ts).
 */
export const documentOnly: FastifySchemaCompiler<unknown> = () => () => true;

/** What every multipart route's OpenAPI description says about text parts sent as files. */
export const TEXT_PARTS_AS_FILES = `Text parts may also be sent as file parts (as Python requests' \`files=\` and curl's \`-F name=@file\` do): up to ${FIELD_FILE_MAX_BYTES / 1024} KB of UTF-8 text each, read as the field's value.`;
