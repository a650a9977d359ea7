import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { freePort, metricSample } from "@mixdown/devstack";
import { startDeployment, waitForEnd, type Deployment } from "../testing/harness.ts";

const TOKEN = "worker-metrics-token-42";

describe("metrics of a worker running real jobs", () => {
  let d: Deployment;
  let workerUrl: string;
  before(async () => {
    const port = await freePort();
    workerUrl = `http://127.0.0.1:${port}`;
    // One attempt per job, so a failing job ends at once.
    d = await startDeployment({
      WORKER_QUEUES: "voice-blend",
      WORKER_HEALTH_PORT: String(port),
      HOST: "127.0.0.1",
      JOB_ATTEMPTS: "1",
      METRICS_TOKEN: TOKEN,
    });
    const deadline = Date.now() + 120_000;
    // The health port opens once the worker has started (and registered the default voices).
    for (;;) {
      const up = await fetch(`${workerUrl}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (Date.now() > deadline) throw new Error("the worker's health port never opened");
      await new Promise((r) => setTimeout(r, 250));
    }
  });
  after(async () => {
    await d?.stop();
  });

  const blend = (body: object) =>
    fetch(`${d.baseUrl}/api/kits/v1/voice-blender`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const scrape = (url: string, token?: string) =>
    fetch(`${url}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

  it("counts a succeeded and a failed blend by kind and status, with their durations, busy/idle per queue; the API shows the totals", async () => {
    const [flint, lumen] = await Promise.all(
      ["native-flint", "native-lumen"].map(async (slug) => (await d.prisma.voiceModel.findUniqueOrThrow({ where: { slug } })).id),
    );
    const good = (await (await blend({ modelId1: flint, modelId2: lumen, alpha: 0.5 })).json()) as any;
    assert.equal((await waitForEnd(d, `voice-blender/${good.id}`, 60_000)).status, "success");

    // A model whose file is not in storage: the blend fails on its only attempt.
    const ghost = await d.prisma.voiceModel.create({
      data: { title: "Ghost", architecture: "native", sampleRate: 44100, fileKey: "voice-models/ghost/model.onnx" },
    });
    const bad = (await (await blend({ modelId1: flint, modelId2: ghost.id, alpha: 0.5 })).json()) as any;
    assert.equal((await waitForEnd(d, `voice-blender/${bad.id}`, 60_000)).status, "error");

    const denied = await scrape(workerUrl);
    assert.equal(denied.status, 401);
    assert.deepEqual(await denied.json(), {
      statusCode: 401,
      error: "Unauthorized",
      message: "missing Authorization header: send `Authorization: Bearer <METRICS_TOKEN>`",
    });
    assert.equal((await scrape(workerUrl, "not-the-token-at-all")).status, 401);

    // The row is updated inside the job; the Worker's completed/failed events (and the counters) follow it: wait for both.
    let text = "";
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const res = await scrape(workerUrl, TOKEN);
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
      text = await res.text();
      const ended = (status: string) =>
        (metricSample(text, "mixdown_jobs_ended_total", { kind: "voice_blend", status }) ?? 0) >= 1;
      if (ended("success") && ended("error") && metricSample(text, "mixdown_worker_active_jobs", { queue: "voice-blend" }) === 0)
        break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(metricSample(text, "mixdown_jobs_ended_total", { kind: "voice_blend", status: "success" }), 1);
    assert.equal(metricSample(text, "mixdown_jobs_ended_total", { kind: "voice_blend", status: "error" }), 1);
    assert.equal(metricSample(text, "mixdown_job_duration_seconds_count", { kind: "voice_blend", status: "success" }), 1);
    assert.ok(metricSample(text, "mixdown_job_duration_seconds_sum", { kind: "voice_blend", status: "success" })! > 0);
    assert.equal(
      metricSample(text, "mixdown_job_duration_seconds_bucket", { kind: "voice_blend", status: "success", le: "+Inf" }),
      1,
    );
    assert.equal(metricSample(text, "mixdown_worker_concurrency", { queue: "voice-blend" }), 2);
    assert.equal(metricSample(text, "mixdown_worker_active_jobs", { queue: "voice-blend" }), 0);
    assert.ok(metricSample(text, "process_resident_memory_bytes", {})! > 0);

    const api = await (await scrape(d.baseUrl, TOKEN)).text();
    assert.equal(metricSample(api, "mixdown_jobs", { kind: "voice_blend", status: "success" }), 1);
    assert.equal(metricSample(api, "mixdown_jobs", { kind: "voice_blend", status: "error" }), 1);
    assert.equal(metricSample(api, "mixdown_jobs_created_total", { kind: "voice_blend" }), 2);
    assert.equal(metricSample(api, "mixdown_queue_jobs", { queue: "voice-blend", state: "completed" }), 1);
    assert.equal(metricSample(api, "mixdown_queue_jobs", { queue: "voice-blend", state: "failed" }), 1);
  });
});
