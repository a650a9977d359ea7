import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { KITS_CLIENT_OPENAPI_PATH, renderOpenApiDocument } from "../src/openapi-document.ts";
import { redoclyProblems, spectralProblems } from "./support/openapi-lint.ts";

test("the OpenAPI document committed for @mixdown/kits-client is the one the API serves (else: pnpm client:generate)", async () => {
  const committed = await readFile(KITS_CLIENT_OPENAPI_PATH, "utf8");
  const current = await renderOpenApiDocument();
  assert.ok(committed === current, "packages/kits-client/openapi.json is stale: run `pnpm client:generate` and commit it");
});

// The document as other people's tools read it: the field's two linters, recommended rulesets.
// What they still warn about, and why it stays, is in docs/api.md ("The OpenAPI document").
test("the served document passes Spectral (spectral:oas) and Redocly (recommended) with no error", async () => {
  const document = await renderOpenApiDocument();
  const problems = [...(await spectralProblems(document)), ...(await redoclyProblems(document))];
  const errors = problems.filter((p) => p.severity === "error");
  assert.deepEqual(
    errors.map((p) => `${p.linter} ${p.rule} at ${p.where}: ${p.message}`),
    [],
  );
  // The two counted separately, so that a linter that found nothing to read cannot pass this.
  assert.ok(
    problems.some((p) => p.linter === "spectral") && problems.some((p) => p.linter === "redocly"),
    "both linters report their warnings",
  );
});

test("every operation has a unique operationId, a description, declared tags and security, and no required list parameter with a default", async () => {
  const document = JSON.parse(await renderOpenApiDocument()) as {
    tags: { name: string; description: string }[];
    servers: unknown[];
    paths: Record<
      string,
      Record<
        string,
        {
          operationId?: string;
          description?: string;
          tags?: string[];
          security?: unknown[];
          parameters?: { name: string; required?: boolean; schema?: { default?: unknown } }[];
        }
      >
    >;
  };
  assert.ok(document.servers.length > 0);
  const declared = new Set(document.tags.map((t) => t.name));
  const ids: string[] = [];
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      const where = `${method.toUpperCase()} ${path}`;
      assert.match(op.operationId ?? "", /^[a-z][A-Za-z]+$/, `${where}: operationId`);
      ids.push(op.operationId!);
      assert.ok((op.description ?? "").length > 20, `${where}: description`);
      assert.ok(Array.isArray(op.security), `${where}: security declared (an empty list where none is needed)`);
      for (const tag of op.tags ?? []) assert.ok(declared.has(tag), `${where}: tag ${tag} declared`);
      for (const p of op.parameters ?? [])
        if (p.schema?.default !== undefined)
          assert.notEqual(p.required, true, `${where}: ${p.name} has a default, so it is optional`);
    }
  }
  assert.equal(new Set(ids).size, ids.length, `operationIds are unique: ${ids.join(", ")}`);
});
