import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "@mixdown/config";
import { metricSample } from "@mixdown/devstack";
import { buildApp, type App } from "../src/index.ts";
import { storedGroupOf } from "../src/metrics/stored-bytes.ts";
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

  test("stored bytes and objects by area and kind (the bucket's listing; STORAGE_LOCAL_DIR's files), counted at most every 5 minutes, and free disk", async () => {
    // S3 (s3rver): the whole bucket (what this file's creates stored, and an output put here), by
    // another API whose count is its first, cross-checked against the bucket's keys and their sizes.
    const s3 = await appWith({});
    await s3.ctx.storage.putStream("outputs/tts/5/output.wav", Readable.from([Buffer.alloc(700)]));
    const expected = new Map<string, { area: string; kind: string; objects: number; bytes: number }>();
    for (const key of await s3.ctx.storage.list("")) {
      const { area, kind } = storedGroupOf(key);
      const group = expected.get(`${area}/${kind}`) ?? { area, kind, objects: 0, bytes: 0 };
      group.objects += 1;
      group.bytes += (await s3.ctx.storage.stat(key))!.size;
      expected.set(`${area}/${kind}`, group);
    }
    let text = (await s3.inject({ method: "GET", url: "/metrics" })).body;
    assert.ok(metricSample(text, "mixdown_stored_bytes", { area: "outputs", kind: "tts" })! >= 700);
    for (const { area, kind, objects, bytes } of expected.values()) {
      assert.equal(metricSample(text, "mixdown_stored_bytes", { area, kind }), bytes, `${area}/${kind}`);
      assert.equal(metricSample(text, "mixdown_stored_objects", { area, kind }), objects, `${area}/${kind}`);
    }
    assert.equal(metricSample(text, "mixdown_metrics_source_up", { source: "storage" }), 1);
    assert.ok(Math.abs(metricSample(text, "mixdown_stored_count_timestamp_seconds", {})! - Date.now() / 1000) < 60);
    assert.ok(metricSample(text, "mixdown_disk_free_bytes", { dir: "TMP_DIR" })! > 0);
    assert.equal(
      metricSample(text, "mixdown_disk_free_bytes", { dir: "STORAGE_LOCAL_DIR" }),
      undefined,
      "S3: no local storage dir",
    );

    // Local disk: a fresh STORAGE_LOCAL_DIR holding one file of each area.
    const dir = await mkdtemp(join(tmpdir(), "mixdown-stored-bytes-"));
    try {
      const local = await appWith({ STORAGE_DRIVER: "local", STORAGE_LOCAL_DIR: dir, SIGNED_URL_SECRET: "s".repeat(32) });
      const put = (key: string, bytes: number) => local.ctx.storage.putStream(key, Readable.from([Buffer.alloc(bytes)]));
      await put("uploads/voice-conversion/0b1c.wav", 300);
      await put("outputs/stem-split/7/vocals.wav", 1000);
      await put("outputs/stem-split/7/drums.wav", 1000);
      await put("voice-models/3/model.onnx", 500);
      text = (await local.inject({ method: "GET", url: "/metrics" })).body;
      assert.equal(metricSample(text, "mixdown_stored_bytes", { area: "uploads", kind: "voice-conversion" }), 300);
      assert.equal(metricSample(text, "mixdown_stored_bytes", { area: "outputs", kind: "stem-split" }), 2000);
      assert.equal(metricSample(text, "mixdown_stored_objects", { area: "outputs", kind: "stem-split" }), 2);
      assert.equal(metricSample(text, "mixdown_stored_bytes", { area: "voice-models", kind: "voice-model" }), 500);
      assert.ok(metricSample(text, "mixdown_disk_free_bytes", { dir: "STORAGE_LOCAL_DIR" })! > 0);
      // Within the 5 minutes, a scrape reports the last count: listing a bucket on every scrape would cost too much.
      await put("outputs/stem-split/8/vocals.wav", 4000);
      text = (await local.inject({ method: "GET", url: "/metrics" })).body;
      assert.equal(metricSample(text, "mixdown_stored_bytes", { area: "outputs", kind: "stem-split" }), 2000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
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
