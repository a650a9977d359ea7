// Retention end to end: a real voice conversion through the API and a worker process, whose
// scheduled sweep (RETENTION_SWEEP_INTERVAL_SECONDS=1) deletes its uploads and then its outputs
// once they are past their time (the job's end is moved back in the database instead of waiting
// the minutes), with the record, the bucket and the worker's /metrics after each step.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { registerVoiceCatalogue } from "@mixdown/db";
import { freePort, metricSample, testFilesDir } from "@mixdown/devstack";
import { createStorage, jobOutputKeys } from "@mixdown/storage";
import { loadConfig } from "@mixdown/config";
import { writeContentVecSignatureModel } from "@mixdown/voice";
import { catalogueRows } from "@mixdown/voice/catalogue";
import { getJson, postForm, startDeployment, waitForEnd, type Deployment } from "../testing/harness.ts";

const run = promisify(execFile);
const TOKEN = "retention-metrics-token";

describe("retention through the API and a worker", () => {
  let d: Deployment;
  let workerUrl: string;
  before(async () => {
    const models = await testFilesDir("retention-models-");
    await writeFile(join(models, "contentvec.onnx"), writeContentVecSignatureModel());
    const port = await freePort();
    workerUrl = `http://127.0.0.1:${port}`;
    d = await startDeployment({
      WORKER_QUEUES: "voice-conversion",
      VOICE_CONTENTVEC_MODEL: join(models, "contentvec.onnx"),
      RETENTION_INPUT_MINUTES: "10",
      RETENTION_OUTPUT_MINUTES: "60",
      RETENTION_SWEEP_INTERVAL_SECONDS: "1",
      WORKER_HEALTH_PORT: String(port),
      METRICS_TOKEN: TOKEN,
    });
    await registerVoiceCatalogue(d.prisma, await catalogueRows(d.env.MODELS_DIR!));
  });
  after(async () => {
    await d?.stop();
  });

  const metric = async (name: string, labels: Record<string, string>) => {
    const res = await fetch(`${workerUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    return metricSample(await res.text(), name, labels) ?? 0;
  };
  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  it("a conversion's uploads go RETENTION_INPUT_MINUTES after its end and its outputs RETENTION_OUTPUT_MINUTES after; the record then has null URLs and outputsExpiredAt", async () => {
    const aria = (await d.prisma.voiceModel.findUniqueOrThrow({ where: { slug: "native-aria" } })).id;
    const dir = await testFilesDir("retention-");
    const [input, backing] = [join(dir, "in.wav"), join(dir, "backing.mp3")];
    await run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=330:d=2", "-ar", "44100", input]);
    await run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=220:d=2", "-ar", "44100", backing]);
    const created = await postForm(d, "voice-conversions", {
      voiceModelId: String(aria),
      soundFile: { path: input },
      backingSoundFile: { path: backing },
    });
    assert.equal(created.status, 201, await created.clone().text());
    const { id } = (await created.json()) as { id: number };
    const done = await waitForEnd(d, `voice-conversions/${id}`);
    assert.equal(done.status, "success", done.errorMessage);
    assert.equal(done.outputsExpiredAt, null);
    // the interface's timestamps, `2026-11-29 12:00:00.000000 +00:00`, as instants
    const instant = (t: string) => Date.parse(`${t.slice(0, 10)}T${t.slice(11, 23)}Z`);
    assert.equal(instant(done.outputsExpireAt) - instant(done.jobEndTime), 60 * 60_000, "its end plus RETENTION_OUTPUT_MINUTES");

    const storage = createStorage(loadConfig(d.env));
    try {
      const row = await d.prisma.voiceConversionJob.findUniqueOrThrow({ where: { id } });
      const outputs = await storage.list(jobOutputKeys("voice-conversion", id).prefix);
      assert.equal(outputs.length, 3, outputs.join(", "));
      assert.ok(await storage.exists(row.inputKey));
      assert.ok(await storage.exists(row.backingKey!));

      // 30 minutes after its end: the uploads go, the outputs stay.
      await d.prisma.voiceConversionJob.update({ where: { id }, data: { jobEndTime: new Date(Date.now() - 30 * 60_000) } });
      await until(
        "the uploads' sweep",
        () => d.prisma.voiceConversionJob.findUniqueOrThrow({ where: { id } }),
        (r) => r.inputsExpiredAt !== null,
      );
      assert.equal(await storage.exists(row.inputKey), false);
      assert.equal(await storage.exists(row.backingKey!), false);
      assert.deepEqual(await storage.list(jobOutputKeys("voice-conversion", id).prefix), outputs);
      const stillThere = await getJson(d, `voice-conversions/${id}`);
      assert.ok(stillThere.outputFileUrl && (await fetch(stillThere.outputFileUrl)).ok);
      assert.equal(stillThere.outputsExpiredAt, null);

      // Two hours after its end: the outputs go; the record says when, and its URLs are null.
      await d.prisma.voiceConversionJob.update({ where: { id }, data: { jobEndTime: new Date(Date.now() - 120 * 60_000) } });
      const expired = await until(
        "the outputs' sweep",
        () => getJson(d, `voice-conversions/${id}`),
        (r) => r.outputsExpiredAt !== null,
      );
      assert.deepEqual([expired.outputFileUrl, expired.lossyOutputFileUrl, expired.recombinedAudioFileUrl], [null, null, null]);
      assert.equal(expired.status, "success");
      assert.equal(expired.outputsExpireAt, expired.outputsExpiredAt);
      assert.deepEqual(await storage.list(jobOutputKeys("voice-conversion", id).prefix), []);
      // the old signed link no longer serves anything
      assert.equal((await fetch(stillThere.outputFileUrl)).status, 404);
      // listed alike
      const listed = await getJson(d, "voice-conversions");
      assert.equal(listed.data.find((j: { id: number }) => j.id === id).outputsExpiredAt, expired.outputsExpiredAt);

      // The worker's /metrics counted what its sweeps deleted.
      await until(
        "the metrics",
        () => metric("mixdown_retention_deleted_objects_total", { files: "outputs" }),
        (v) => v >= 3,
      );
      assert.equal(await metric("mixdown_retention_deleted_objects_total", { files: "inputs" }), 2);
      assert.equal(await metric("mixdown_retention_expired_jobs_total", { kind: "voice_conversion", files: "outputs" }), 1);
      assert.equal(await metric("mixdown_retention_expired_jobs_total", { kind: "voice_conversion", files: "inputs" }), 1);
      assert.ok((await metric("mixdown_retention_deleted_bytes_total", { files: "outputs" })) > 10_000);
      assert.ok((await metric("mixdown_retention_last_sweep_timestamp_seconds", {})) > Date.now() / 1000 - 60);
    } finally {
      await storage.close();
    }
  });
});
