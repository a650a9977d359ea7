import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "@mixdown/config";
import { metricSample } from "@mixdown/devstack";
import { buildApp, type App } from "../src/index.ts";
import { audio, multipart, startHarness, type Harness } from "./helpers.ts";

let h: Harness;
const extraApps: App[] = [];
before(async () => {
  h = await startHarness("s3");
});
after(async () => {
  for (const app of extraApps) await app.close();
  await h?.stop();
});

/** Another API over the same services with other metrics settings. */
async function appWith(env: Record<string, string>): Promise<App> {
  const app = await buildApp(loadConfig({ ...h.stack.env, LOG_LEVEL: "silent", ...env }), { authCacheTtlMs: 0 });
  await app.ready();
  extraApps.push(app);
  return app;
}

describe("GET /metrics", () => {
  test("after creates: jobs created, jobs by kind and status, queue depth, upload bytes and request durations by route pattern", async () => {
    const caller = await h.newCaller();
    const wav = await audio("wav");
    for (let i = 0; i < 2; i++) {
      const form = multipart({}, [{ name: "inputFile", filename: "a.wav", content: wav }]);
      const res = await h.app.inject({
        method: "POST",
        url: "/api/kits/v1/vocal-separations",
        headers: { ...form.headers, ...caller.auth },
        payload: form.payload,
      });
      assert.equal(res.statusCode, 200, res.body);
    }
    // A replay is not a create.
    const form = multipart({}, [{ name: "inputFile", filename: "a.wav", content: wav }]);
    for (let i = 0; i < 2; i++) {
      const res = await h.app.inject({
        method: "POST",
        url: "/api/kits/v1/stem-splits",
        headers: { ...form.headers, ...caller.auth, "idempotency-key": "once" },
        payload: form.payload,
      });
      assert.equal(res.statusCode, 200, res.body);
    }
    const created = await h.prisma.separationJob.findFirstOrThrow({
      where: { callerId: caller.callerId, kind: "vocal_separation" },
    });
    await h.prisma.separationJob.update({ where: { id: created.id }, data: { status: "success" } });
    await h.app.inject({ method: "GET", url: "/api/kits/v1/vocal-separations/999999", headers: caller.auth });
    // inject resolves as the response ends; the onResponse hook that measures it runs just after.
    await new Promise((resolve) => setTimeout(resolve, 50));

    const res = await h.app.inject({ method: "GET", url: "/metrics" });
    assert.equal(res.statusCode, 200);
    assert.match(res.headers["content-type"] as string, /^text\/plain; version=0\.0\.4/);
    const text = res.body;
    assert.equal(metricSample(text, "mixdown_jobs_created_total", { kind: "vocal_separation" }), 2);
    assert.equal(metricSample(text, "mixdown_jobs_created_total", { kind: "stem_split" }), 1);
    assert.equal(metricSample(text, "mixdown_jobs", { kind: "vocal_separation", status: "running" }), 1);
    assert.equal(metricSample(text, "mixdown_jobs", { kind: "vocal_separation", status: "success" }), 1);
    assert.equal(metricSample(text, "mixdown_jobs", { kind: "stem_split", status: "running" }), 1);
    assert.equal(metricSample(text, "mixdown_jobs", { kind: "voice_blend", status: "error" }), 0);
    assert.equal(metricSample(text, "mixdown_queue_jobs", { queue: "separation", state: "waiting" }), 3);
    assert.equal(metricSample(text, "mixdown_queue_jobs", { queue: "voice-conversion", state: "waiting" }), 0);
    assert.equal(metricSample(text, "mixdown_metrics_source_up", { source: "redis" }), 1);
    assert.equal(metricSample(text, "mixdown_metrics_source_up", { source: "postgres" }), 1);
    // Three bodies received whole (the replay's bytes were received too).
    assert.equal(
      metricSample(text, "mixdown_upload_bytes_total", { route: "/api/kits/v1/vocal-separations", field: "inputFile" }),
      2 * wav.length,
    );
    assert.equal(
      metricSample(text, "mixdown_upload_bytes_total", { route: "/api/kits/v1/stem-splits", field: "inputFile" }),
      2 * wav.length,
    );
    assert.equal(
      metricSample(text, "mixdown_http_request_duration_seconds_count", {
        method: "POST",
        route: "/api/kits/v1/vocal-separations",
        status_code: "200",
      }),
      2,
    );
    assert.equal(
      metricSample(text, "mixdown_http_request_duration_seconds_count", {
        method: "GET",
        route: "/api/kits/v1/vocal-separations/:id",
        status_code: "404",
      }),
      1,
    );
    assert.doesNotMatch(text, /vocal-separations\/999999/, "raw URLs are not labels");
    assert.ok(metricSample(text, "process_cpu_user_seconds_total", {})! > 0, "prom-client's default process metrics");
  });

  test("with METRICS_TOKEN set: 401 JSON without or with a wrong token, 200 with it", async () => {
    const token = "metrics-token-0123456789";
    const app = await appWith({ METRICS_TOKEN: token });
    const missing = await app.inject({ method: "GET", url: "/metrics" });
    assert.equal(missing.statusCode, 401);
    assert.deepEqual(missing.json(), {
      statusCode: 401,
      error: "Unauthorized",
      message: "missing Authorization header: send `Authorization: Bearer <METRICS_TOKEN>`",
    });
    const wrong = await app.inject({
      method: "GET",
      url: "/metrics",
      headers: { authorization: "Bearer metrics-token-0123456788" },
    });
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.json().message, "invalid metrics token");
    const ok = await app.inject({ method: "GET", url: "/metrics", headers: { authorization: `Bearer ${token}` } });
    assert.equal(ok.statusCode, 200);
    assert.match(ok.body, /^# HELP mixdown_/m);
  });

  test("with METRICS_ENABLED=false: /metrics is a 404 and nothing is measured", async () => {
    const app = await appWith({ METRICS_ENABLED: "false" });
    const res = await app.inject({ method: "GET", url: "/metrics" });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), { statusCode: 404, error: "Not Found", message: "route GET /metrics not found" });
    assert.equal(app.ctx.metrics, undefined);
  });

  test("a short METRICS_TOKEN is refused at start", () => {
    assert.throws(() => loadConfig({ ...h.stack.env, METRICS_TOKEN: "short" }), /METRICS_TOKEN must be at least 16 characters/);
  });
});
