import type { FastifySchemaCompiler } from "fastify";

/**
 * Multipart bodies are streamed by the handler, not parsed up front: their route schema only
 * documents the form in OpenAPI, and this compiler keeps it from being applied to the
 * (absent) parsed body. The handler validates each part itself.
 */
export const documentOnly: FastifySchemaCompiler<unknown> = () => () => true;
