import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { EnvSchema, loadConfig } from "../src/index.ts";

const example = readFileSync(new URL("../../../.env.example", import.meta.url), "utf8");
/** Variables .env.example mentions, set (`KEY=`) or commented out (`# KEY=`). */
const documented = new Set([...example.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]));

test(".env.example documents every variable of the config schema", () => {
  const missing = Object.keys(EnvSchema.properties).filter((key) => !documented.has(key));
  assert.deepEqual(missing, [], `add these to .env.example: ${missing.join(", ")}`);
});

test(".env.example names no variable the schema does not know", () => {
  const unknown = [...documented].filter((key) => !(key in EnvSchema.properties));
  assert.deepEqual(unknown, []);
});

test("the values set in .env.example are the schema's defaults and load as a valid config", () => {
  const set = Object.fromEntries([...example.matchAll(/^([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1], m[2]]));
  const config = loadConfig({ ...set, SIGNED_URL_SECRET: "x".repeat(32) });
  const defaults = loadConfig({ DATABASE_URL: set.DATABASE_URL, SIGNED_URL_SECRET: "x".repeat(32) });
  assert.deepEqual(config, defaults);
});
