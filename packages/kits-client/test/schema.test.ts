import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { renderSchema, SCHEMA_PATH } from "../scripts/schema.ts";

test("src/schema.ts holds the types of the committed openapi.json (else: pnpm client:generate)", async () => {
  const committed = await readFile(SCHEMA_PATH, "utf8");
  assert.ok(committed === (await renderSchema()), "src/schema.ts is stale: run `pnpm client:generate` and commit it");
});
