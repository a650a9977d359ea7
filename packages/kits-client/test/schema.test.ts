import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { CONTROLS_PATH, renderControls, renderSchema, SCHEMA_PATH } from "../scripts/schema.ts";

test("src/schema.ts holds the types of the committed openapi.json (else: pnpm client:generate)", async () => {
  const committed = await readFile(SCHEMA_PATH, "utf8");
  assert.ok(committed === (await renderSchema()), "src/schema.ts is stale: run `pnpm client:generate` and commit it");
});

test("src/controls.ts holds the conversion controls and effects the API validates with (else: pnpm client:generate)", async () => {
  const committed = await readFile(CONTROLS_PATH, "utf8");
  assert.ok(committed === renderControls(), "src/controls.ts is stale: run `pnpm client:generate` and commit it");
});
