import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:net";
import { after, before, describe, it } from "node:test";
import { logLines, startDeployment, type Deployment } from "../testing/harness.ts";

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** The worker's log lines (pino JSON on stdout) as they come. */
// WebGPU cannot run on these CPU machines (Dawn finds no Vulkan adapter, or refuses lavapipe),
// so a worker asked for it shows what an operator sees on a GPU node that lost its GPU. Where
// WebGPU does run, these tests are skipped rather than passed.
describe("worker execution provider at start", () => {
  let d: Deployment;
  before(async () => {
    d = await startDeployment(
      { WORKER_QUEUES: "separation", ORT_EXECUTION_PROVIDER: "webgpu", LOG_LEVEL: "info", HOST: "127.0.0.1" },
      { worker: false },
    );
  });
  after(async () => {
    await d?.stop();
  });

  it("refuses to start on a provider that cannot load the models, naming the provider, the reason and what it needs", async (t) => {
    d.env.ORT_PROVIDER_FALLBACK = "none";
    d.env.WORKER_HEALTH_PORT = "0";
    const worker = d.startWorker("pipe");
    const lines = logLines(worker);
    const [code] = (await once(worker, "exit")) as [number | null];
    const ran = lines.find((l) => l.msg === "separation model runs on webgpu");
    if (ran) return t.skip("webgpu runs on this machine");
    assert.equal(code, 1);
    const fatal = lines.find((l) => l.msg === "worker could not start");
    assert.ok(fatal, JSON.stringify(lines));
    assert.match(
      String(fatal.err),
      /execution provider "webgpu" cannot run .*vocals\.onnx \(the model runs on cpu\): .*adapter.*libvulkan1/,
    );
  });

  it("with ORT_PROVIDER_FALLBACK=cpu, starts on cpu, warns with the reason and shows the provider in /metrics", async (t) => {
    const port = await freePort();
    d.env.ORT_PROVIDER_FALLBACK = "cpu";
    d.env.WORKER_HEALTH_PORT = String(port);
    const worker = d.startWorker("pipe");
    const lines = logLines(worker);
    const deadline = Date.now() + 120_000;
    while (
      !(await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      ))
    ) {
      assert.equal(worker.exitCode, null, `the worker exited: ${JSON.stringify(lines)}`);
      assert.ok(Date.now() < deadline, "the worker's health port never opened");
      await new Promise((r) => setTimeout(r, 250));
    }
    if (lines.some((l) => l.msg === "separation model runs on webgpu")) return t.skip("webgpu runs on this machine");
    for (const model of ["vocals", "stems"]) {
      const warning = lines.find((l) => l.model === model && l.level === 40);
      assert.ok(warning, `no warning for ${model}: ${JSON.stringify(lines)}`);
      assert.equal(warning.msg, "separation model runs on cpu: webgpu is unavailable (ORT_PROVIDER_FALLBACK=cpu)");
      assert.equal(warning.provider, "cpu");
      assert.match(String(warning.reason), /execution provider "webgpu" cannot run/);
    }
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.match(metrics, /mixdown_worker_execution_provider\{model="vocals",requested="webgpu",provider="cpu"\} 1/);
    assert.match(metrics, /mixdown_worker_execution_provider\{model="stems",requested="webgpu",provider="cpu"\} 1/);
  });
});
