// The OpenAPI document as the truth of the wire: every answer the API gives in a test (through the
// harness) is checked against the document the API serves, with openapi-backend's validator (a
// standard OpenAPI request/response validator, its schemas compiled by Ajv): the route must be a
// documented operation, the status one the operation declares, the Content-Type one of the declared
// response's media types (none where it declares no content), the JSON body the declared schema,
// each header the response declares of its schema when sent, and sent when `required`. A difference is recorded and
// the harness fails the test file that saw one when it stops. What was checked is kept too
// (`covered`), so that a test can tell which (operation, status) pairs the suite drove.
import { OpenAPIBackend, SetMatchType, type Operation } from "openapi-backend";
import addFormatsModule from "ajv-formats";
import type { FastifyInstance } from "fastify";

// ajv-formats is CommonJS: its default export is the function.
const addFormats = addFormatsModule as unknown as (ajv: object) => void;

/**
 * openapi-backend checks the document itself against OpenAPI 3.0's schema only, which a 3.1
 * document (JSON Schema 2020-12 keywords such as `examples`, `type: "null"`) does not pass. That
 * check is left out here: the document's validity is what the linters' test checks
 * (openapi-document.test.ts); the validator's work on answers is unchanged.
 */
class DocumentValidator extends OpenAPIBackend {
  override validateDefinition() {
    return this.document;
  }
}

/** Fastify's route pattern as the document writes it: `/x/:id` -> `/x/{id}`, `/files/*` -> `/files/{key}`. */
export const documentPath = (url: string) => url.replace(/:(\w+)/g, "{$1}").replace(/\/\*$/, "/{key}");

/** Whether a Content-Type is one of a response's declared media ranges (`*\/*`, `audio/*`, exact). */
function mediaTypeDeclared(contentType: string, declared: string[]): boolean {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  return declared.some(
    (range) => range === "*/*" || range === type || (range.endsWith("/*") && type.startsWith(range.slice(0, -1))),
  );
}

interface Answer {
  method: string;
  path: string;
  status: number;
  headers: Record<string, string>;
  payload: string | undefined;
  /** Whether a body was sent that is not a string (a file's stream). */
  streamed: boolean;
}

export class WireCheck {
  readonly problems: string[] = [];
  /** `<operationId> <status>` of every answer that was checked and matched the document. */
  readonly covered = new Set<string>();
  #validator: Promise<DocumentValidator> | undefined;
  readonly #answers: Answer[] = [];

  /** Hooks the app (before it is ready): each answer is kept, and checked by `verify`. */
  attach(app: FastifyInstance): void {
    app.addHook("onSend", async (request, reply, payload) => {
      const url = request.routeOptions.url;
      // The interactive reference and HEAD requests are not operations of the document.
      if (!url || url.startsWith("/docs") || request.method === "HEAD") return payload;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : String(value);
      }
      this.#answers.push({
        method: request.method.toLowerCase(),
        path: documentPath(url),
        status: reply.statusCode,
        headers,
        payload: typeof payload === "string" ? payload : Buffer.isBuffer(payload) ? payload.toString("utf8") : undefined,
        streamed: payload !== null && payload !== undefined && typeof payload !== "string" && !Buffer.isBuffer(payload),
      });
      return payload;
    });
    this.#validator = new Promise((resolve, reject) => {
      app.addHook("onReady", async () => {
        const api = new DocumentValidator({
          definition: structuredClone(app.swagger()) as never,
          quick: false,
          customizeAjv: (ajv) => {
            addFormats(ajv);
            // Binary bodies are not JSON: nothing to check in them.
            ajv.addFormat("binary", true);
            return ajv;
          },
        });
        await api.init().then(resolve, reject);
      });
    });
  }

  /** Checks every answer kept since the last call. */
  async verify(): Promise<void> {
    if (!this.#validator) throw new Error("WireCheck.attach was not called");
    const api = await this.#validator;
    const operations = api.getOperations();
    for (const answer of this.#answers.splice(0)) {
      const operation = operations.find((op) => op.path === answer.path && op.method === answer.method);
      if (!operation) {
        // The dashboard's static files are not part of the API (and not documented).
        if (!["/", "/assets/{key}", "/{key}"].includes(answer.path)) {
          this.problems.push(`${answer.method.toUpperCase()} ${answer.path}: not in the document`);
        }
        continue;
      }
      const found = this.#problemsOf(api, operation, answer);
      const key = `${operation.operationId} ${answer.status}`;
      if (found.length === 0) this.covered.add(key);
      else this.problems.push(`${key} (${answer.method.toUpperCase()} ${answer.path}): ${found.join("; ")}`);
    }
  }

  #problemsOf(api: DocumentValidator, operation: Operation, answer: Answer): string[] {
    const response = operation.responses?.[String(answer.status)] as
      { content?: Record<string, unknown>; headers?: Record<string, { required?: boolean }> } | undefined;
    if (!response) return [`answered ${answer.status}, which the document does not declare`];
    const problems: string[] = [];
    const declared = Object.keys(response.content ?? {});
    const contentType = answer.headers["content-type"];
    const hasBody = answer.streamed || (answer.payload !== undefined && answer.payload.length > 0);
    if (declared.length === 0) {
      if (hasBody) problems.push(`a body (${contentType ?? "no Content-Type"}) where the document declares none`);
    } else if (!contentType || !mediaTypeDeclared(contentType, declared)) {
      problems.push(`Content-Type ${contentType ?? "(none)"}, the document declares ${declared.join(", ")}`);
    } else if (contentType.startsWith("application/json")) {
      let body: unknown;
      try {
        body = JSON.parse(answer.payload ?? "");
      } catch {
        problems.push("the body is not JSON");
      }
      const result = api.validator.validateResponse(body, operation, answer.status);
      for (const e of (result.errors ?? []).slice(0, 3)) problems.push(`body${e.instancePath} ${e.message}`);
    }
    // Each declared header that was sent, against its schema; each `required` one, sent at all.
    const headers = api.validator.validateResponseHeaders(answer.headers, operation, {
      statusCode: answer.status,
      setMatchType: SetMatchType.Any,
    });
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      if (header.required && answer.headers[name.toLowerCase()] === undefined)
        problems.push(`header ${name} (required) was not sent`);
    }
    for (const e of (headers.errors ?? []).slice(0, 3)) {
      const header = e.instancePath.replace(/^\/headers\/?/, "");
      problems.push(header ? `header ${header} ${e.message}` : `headers ${e.message}`);
    }
    return problems;
  }
}
