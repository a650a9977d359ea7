// The OpenAPI document as the truth of the wire: every answer the API gives in a test (through the
// harness) is checked against what the document the API serves says of its route, status and body,
// with Ajv on the document's own JSON Schemas (OpenAPI 3.1 = JSON Schema 2020-12). A route the
// document leaves out, a status it does not declare for the route, or a JSON body that is not the
// declared schema is recorded; the harness fails the test file that saw one when it stops.
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { FastifyInstance } from "fastify";

// ajv-formats is CommonJS: its default export is the function.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

interface Operation {
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}
type Doc = { paths: Record<string, Record<string, Operation>> };

/** Fastify's route pattern as the document writes it: `/x/:id` -> `/x/{id}`, `/files/*` -> `/files/{key}`. */
const documentPath = (url: string) => url.replace(/:(\w+)/g, "{$1}").replace(/\/\*$/, "/{key}");

export class WireCheck {
  readonly problems: string[] = [];
  #doc: Doc | undefined;
  #ajv: Ajv2020 | undefined;
  readonly #validators = new Map<string, ValidateFunction>();

  /** Hooks the app (before it is ready): each answer is checked once the document can be read. */
  attach(app: FastifyInstance): void {
    app.addHook("onSend", async (request, reply, payload) => {
      const url = request.routeOptions.url;
      if (url) this.check(app, request.method, url, reply.statusCode, String(reply.getHeader("content-type") ?? ""), payload);
      return payload;
    });
  }

  check(app: FastifyInstance, method: string, url: string, status: number, contentType: string, payload: unknown): void {
    // Outages (503 with Retry-After) may come from any route: the document says so once, in its description.
    if (status === 503 || url.startsWith("/docs") || method === "HEAD") return;
    this.#doc ??= app.swagger() as unknown as Doc;
    const path = documentPath(url);
    const operation = this.#doc.paths[path]?.[method.toLowerCase()];
    if (!operation) {
      // The dashboard's static files are not part of the API (and not documented).
      if (!/^\/(|assets\/\*|\*)$/.test(url) && path !== "/") this.problems.push(`${method} ${path}: not in the document`);
      return;
    }
    const response = operation.responses?.[String(status)];
    if (!response) {
      this.problems.push(`${method} ${path}: answered ${status}, which the document does not declare`);
      return;
    }
    const schema = response.content?.["application/json"]?.schema;
    if (!schema || !contentType.startsWith("application/json") || typeof payload !== "string") return;
    const key = `${method} ${path} ${status}`;
    let validate = this.#validators.get(key);
    if (!validate) {
      if (!this.#ajv) {
        this.#ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
        addFormats(this.#ajv);
        this.#ajv.addSchema(this.#doc as object, "openapi.json");
      }
      const pointer = `/paths/${path.replaceAll("~", "~0").replaceAll("/", "~1")}/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
      validate = this.#ajv.compile({ $ref: `openapi.json#${pointer}` });
      this.#validators.set(key, validate);
    }
    if (!validate(JSON.parse(payload))) {
      const errors = (validate.errors ?? []).slice(0, 3).map((e) => `${e.instancePath || "(body)"} ${e.message}`);
      this.problems.push(`${key}: the body is not the documented schema: ${errors.join("; ")}`);
    }
  }
}
