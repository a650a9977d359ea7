import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { KITS_CLIENT_OPENAPI_PATH, renderOpenApiDocument } from "../src/openapi-document.ts";

test("the OpenAPI document committed for @mixdown/kits-client is the one the API serves (else: pnpm client:generate)", async () => {
  const committed = await readFile(KITS_CLIENT_OPENAPI_PATH, "utf8");
  const current = await renderOpenApiDocument();
  assert.ok(committed === current, "packages/kits-client/openapi.json is stale: run `pnpm client:generate` and commit it");
});
