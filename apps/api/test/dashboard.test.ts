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

  test("every answer carries the security headers; the dashboard's CSP runs only this origin's scripts and fetches media only from the storage's origin", async () => {
    const index = await app.inject({ url: "/" });
    const csp = Object.fromEntries(
      String(index.headers["content-security-policy"])
        .split(";")
        .map((d) => d.trim().split(/\s+/))
        .map(([name, ...values]) => [name, values]),
    );
    assert.deepEqual(csp["script-src"], ["'self'"]);
    assert.deepEqual(csp["object-src"], ["'none'"]);
    assert.deepEqual(csp["frame-ancestors"], ["'none'"]);
    // Local storage signs URLs on the API's own public base URL: that origin, and no wildcard.
    const storageOrigin = new URL(await app.ctx.storage.signedUrl("any/key.wav", 60)).origin;
    for (const directive of ["media-src", "connect-src", "img-src"]) {
      assert.ok(csp[directive].includes(storageOrigin), `${directive} names ${storageOrigin}`);
      assert.ok(
        !csp[directive].some((v: string) => v === "*" || v === "http:" || v === "https:"),
        `${directive} has no wildcard`,
      );
    }
    for (const res of [index, await app.inject({ url: "/api/kits/v1/voice-models" }), await app.inject({ url: "/healthz" })]) {
      assert.equal(res.headers["x-content-type-options"], "nosniff");
      assert.equal(res.headers["x-frame-options"], "SAMEORIGIN");
      assert.equal(res.headers["referrer-policy"], "no-referrer");
      assert.equal(res.headers["strict-transport-security"], undefined, "HSTS belongs to whatever terminates TLS");
      assert.ok(res.headers["content-security-policy"]);
    }
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
