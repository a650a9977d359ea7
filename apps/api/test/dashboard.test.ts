import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "@mixdown/config";
import { ApiKeyRepository, DashboardSignInRepository } from "@mixdown/db";
import { startTestStack, type TestStack } from "@mixdown/devstack";
import { buildApp, type App } from "../src/index.ts";

let stack: TestStack;
let webDir: string;
let app: App;
let unbuilt: App;

before(async () => {
  stack = await startTestStack({ storage: "local" });
  webDir = await mkdtemp(path.join(os.tmpdir(), "mixdown-web-"));
  await mkdir(path.join(webDir, "assets"));
  await writeFile(path.join(webDir, "index.html"), "<!doctype html><title>Mixdown</title>");
  await writeFile(path.join(webDir, "assets", "main-abc123.js"), "console.log(1)");
  const config = loadConfig({ ...stack.env, LOG_LEVEL: "silent" });
  app = await buildApp(config, { webDir });
  unbuilt = await buildApp(config, { webDir: path.join(webDir, "missing") });
});
after(async () => {
  await app?.close();
  await unbuilt?.close();
  await stack?.stop();
  if (webDir) await rm(webDir, { recursive: true, force: true });
});

describe("the web dashboard's files", () => {
  test("serves index.html at / uncached and hashed assets as immutable, leaving unknown paths a JSON 404", async () => {
    const index = await app.inject({ url: "/" });
    assert.equal(index.statusCode, 200);
    assert.match(index.headers["content-type"] as string, /^text\/html/);
    assert.equal(index.headers["cache-control"], "no-cache");
    assert.match(index.body, /<title>Mixdown<\/title>/);
    const asset = await app.inject({ url: "/assets/main-abc123.js" });
    assert.equal(asset.statusCode, 200);
    assert.equal(asset.headers["cache-control"], "public, max-age=31536000, immutable");
    const unknown = await app.inject({ url: "/nothing-here" });
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json().statusCode, 404);
    assert.equal((await app.inject({ url: "/healthz" })).statusCode, 200);
  });

  test("without a build, / answers a JSON 404 saying how to build it and the API still works", async () => {
    const index = await unbuilt.inject({ url: "/" });
    assert.equal(index.statusCode, 404);
    assert.match(index.json().message, /not built.*pnpm --filter @mixdown\/web build/);
    assert.equal((await unbuilt.inject({ url: "/docs/json" })).statusCode, 200);
  });
});

describe("POST /dashboard/sign-in", () => {
  test("exchanges a code for its API key once; a second use is a 401", async () => {
    const created = await new ApiKeyRepository(app.ctx.prisma).createApiKey({ name: "browser" });
    const { code } = await new DashboardSignInRepository(app.ctx.prisma).issue({ apiKeyId: created.id, apiKey: created.key });
    const first = await app.inject({ method: "POST", url: "/dashboard/sign-in", payload: { code } });
    assert.equal(first.statusCode, 200);
    assert.deepEqual(first.json(), { apiKey: created.key });
    assert.equal(first.headers["cache-control"], "no-store");
    const second = await app.inject({ method: "POST", url: "/dashboard/sign-in", payload: { code } });
    assert.equal(second.statusCode, 401);
    assert.match(second.json().message, /unknown, already used or expired/);
  });

  test("rejects a body without a code with a 422 naming the field", async () => {
    const response = await app.inject({ method: "POST", url: "/dashboard/sign-in", payload: {} });
    assert.equal(response.statusCode, 422);
    assert.match(response.json().message, /code/);
  });
});
