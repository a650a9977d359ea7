import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { registerVoiceCatalogue } from "@mixdown/db";
import { testFilesDir } from "@mixdown/devstack";
import { writeContentVecSignatureModel } from "@mixdown/voice";
import { catalogueRows } from "@mixdown/voice/catalogue";
import {
  download,
  getJson,
  makeSong,
  postForm,
  probe,
  startDeployment,
  waitForEnd,
  waitUntil,
  type Deployment,
} from "../testing/harness.ts";

interface StepRecord {
  index: number;
  step: string;
  status: string;
  jobKind: string;
  jobId: number | null;
}

describe("pipelines through the API and the worker", () => {
  let d: Deployment;
  let aria: number;
  let song: string;
  before(async () => {
    const models = await testFilesDir("pipe-models-");
    await writeFile(join(models, "contentvec.onnx"), writeContentVecSignatureModel());
    d = await startDeployment({
      WORKER_QUEUES: "separation,vocal-repair,voice-conversion,mastering,pipeline",
      VOICE_CONTENTVEC_MODEL: join(models, "contentvec.onnx"),
      PIPELINE_POLL_MS: "200",
    });
    await registerVoiceCatalogue(d.prisma, await catalogueRows(d.env.MODELS_DIR!));
    aria = (await d.prisma.voiceModel.findUniqueOrThrow({ where: { slug: "native-aria" } })).id;
    song = await makeSong("pipeline.wav", 2);
  });
  after(async () => {
    await d?.stack.postgres.resume();
    await d?.stop();
  });

  const cover = async (webhookUrl?: string) => {
    const res = await postForm(d, "pipelines", {
      preset: "cover",
      voiceModelId: String(aria),
      inputFile: { path: song },
      ...(webhookUrl ? { webhookUrl } : {}),
    });
    assert.equal(res.status, 201, await res.clone().text());
    return ((await res.json()) as { id: number }).id;
  };
  const stepsOf = async (id: number) => (await getJson(d, `pipelines/${id}`)).steps as StepRecord[];

  it("runs separate -> convert -> recombine, each step's outputs kept and downloadable, one webhook at the end", async () => {
    const id = await cover("https://hooks.example/pipelines");
    const progress: number[] = [];
    const deadline = Date.now() + 300_000;
    let record = await getJson(d, `pipelines/${id}`);
    while (record.status === "running") {
      progress.push(record.progress);
      assert.ok(Date.now() < deadline, `pipeline still running (progress ${record.progress})`);
      await new Promise((r) => setTimeout(r, 250));
      record = await getJson(d, `pipelines/${id}`);
    }
    assert.equal(record.status, "success", record.errorMessage);
    assert.equal(record.progress, 100);
    // one progress for the whole: never back, and through the steps' shares
    assert.deepEqual(
      progress,
      [...progress].sort((a, b) => a - b),
    );
    const steps = record.steps as StepRecord[];
    assert.deepEqual(
      steps.map((s) => [s.step, s.status, s.jobKind]),
      [
        ["separate", "success", "vocal-separations"],
        ["convert", "success", "voice-conversions"],
        ["recombine", "success", "voice-conversions"],
      ],
    );
    assert.equal(steps[2]!.jobId, steps[1]!.jobId, "the recombine is the convert's mix onto the backing");

    const separation = await getJson(d, `vocal-separations/${steps[0]!.jobId}`);
    const conversion = await getJson(d, `voice-conversions/${steps[1]!.jobId}`);
    for (const url of [
      separation.vocalAudioFileUrl,
      separation.backingAudioFileUrl,
      conversion.outputFileUrl,
      conversion.lossyOutputFileUrl,
      conversion.recombinedAudioFileUrl,
    ]) {
      assert.equal(typeof url, "string");
      const info = await probe(await download(url));
      assert.ok(Math.abs(info.duration - 2) < 0.15, `${url}: ${info.duration} s`);
    }
    // each step's job read a copy it owns, and tells no webhook of its own
    const convRow = await d.prisma.voiceConversionJob.findUniqueOrThrow({ where: { id: steps[1]!.jobId! } });
    assert.match(convRow.inputKey, new RegExp(`^uploads/voice-conversion/pipeline-${id}-step-1-input\\.`));
    assert.match(convRow.backingKey ?? "", new RegExp(`^uploads/voice-conversion/pipeline-${id}-step-1-backing\\.`));
    assert.equal(convRow.webhookUrl, null);
    const deliveries = await d.prisma.webhookDelivery.findMany({ where: { rowId: id, jobKind: "pipeline" } });
    assert.deepEqual(
      deliveries.map((w) => [w.event, w.url]),
      [["success", "https://hooks.example/pipelines"]],
    );
  });

  it("runs the vocal-cleanup preset (separate -> repair) and a master step, each as a job of its kind with its outputs downloadable", async () => {
    const post = async (parts: Record<string, string>) => {
      const res = await postForm(d, "pipelines", { ...parts, inputFile: { path: song } });
      assert.equal(res.status, 201, await res.clone().text());
      return ((await res.json()) as { id: number }).id;
    };
    const cleanup = await post({ preset: "vocal-cleanup" });
    const master = await post({ steps: JSON.stringify([{ step: "master", targetLufs: -16 }]) });

    const record = await waitForEnd(d, `pipelines/${cleanup}`, 300_000);
    assert.equal(record.status, "success", record.errorMessage);
    const steps = record.steps as StepRecord[];
    assert.deepEqual(
      steps.map((s) => [s.step, s.status, s.jobKind]),
      [
        ["separate", "success", "vocal-separations"],
        ["repair", "success", "vocal-repairs"],
      ],
    );
    const repair = await getJson(d, `vocal-repairs/${steps[1]!.jobId}`);
    assert.deepEqual(repair.steps, ["dereverb", "denoise"]);
    assert.equal(repair.isolateVocal, false);
    for (const url of [repair.outputFileUrl, repair.lossyOutputFileUrl]) {
      assert.equal(typeof url, "string");
      const info = await probe(await download(url));
      assert.ok(Math.abs(info.duration - 2) < 0.15, `${url}: ${info.duration} s`);
    }
    // the repair read its own copy of the separation's whole vocal, byte for byte
    const repairRow = await d.prisma.vocalRepairJob.findUniqueOrThrow({ where: { id: steps[1]!.jobId! } });
    assert.match(repairRow.inputKey, new RegExp(`^uploads/vocal-repair/pipeline-${cleanup}-step-1-input\\.`));
    const separationRow = await d.prisma.separationJob.findUniqueOrThrow({ where: { id: steps[0]!.jobId! } });
    const bytes = async (key: string) => Buffer.concat(await (await d.api.ctx.storage.getStream(key)).toArray());
    assert.ok((await bytes(repairRow.inputKey)).equals(await bytes(separationRow.vocalKey!)));
    const usage = await d.prisma.usageRecord.findMany({ where: { rowId: repairRow.id, jobKind: "vocal_repair" } });
    assert.equal(usage.length, 1);

    const mastered = await waitForEnd(d, `pipelines/${master}`, 120_000);
    assert.equal(mastered.status, "success", mastered.errorMessage);
    const [step] = mastered.steps as StepRecord[];
    assert.deepEqual([step!.step, step!.jobKind], ["master", "masterings"]);
    const mastering = await getJson(d, `masterings/${step!.jobId}`);
    assert.deepEqual([mastering.mode, mastering.targetLufs, mastering.truePeakDb], ["loudness", -16, -1]);
    for (const url of [mastering.outputFileUrl, mastering.output16BitFileUrl, mastering.lossyOutputFileUrl]) {
      assert.equal(typeof url, "string");
      const info = await probe(await download(url));
      assert.ok(Math.abs(info.duration - 2) < 0.15, `${url}: ${info.duration} s`);
    }
  });

  it("a cancel mid-chain stops the running step and runs no later step", async () => {
    const id = await cover();
    await waitUntil("the separation step is under way", async () => {
      const [first] = await stepsOf(id);
      if (first?.jobId == null) return false;
      const row = await d.prisma.separationJob.findUniqueOrThrow({ where: { id: first.jobId } });
      return row.status === "running" && row.progress > 0;
    });
    const res = await fetch(`${d.baseUrl}/api/kits/v1/pipelines/${id}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.key}` },
    });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { status: string }).status, "cancelled");
    // the worker would have started the next step within a poll: give it many
    await new Promise((r) => setTimeout(r, 3_000));
    const steps = await stepsOf(id);
    assert.equal(steps[0]!.status, "cancelled");
    assert.deepEqual(
      steps.slice(1).map((s) => [s.status, s.jobId]),
      [
        ["pending", null],
        ["pending", null],
      ],
    );
    assert.equal((await getJson(d, `pipelines/${id}`)).status, "cancelled");
  });

  it("a step that fails fails the pipeline, its errorMessage naming the step; no later step runs", async () => {
    const id = await cover();
    await waitUntil("the separation step's job exists", async () => (await stepsOf(id))[0]?.jobId != null);
    const [first] = await stepsOf(id);
    // the step's job ended by its own kind's route, as a caller may
    const res = await fetch(`${d.baseUrl}/api/kits/v1/vocal-separations/${first!.jobId}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.key}` },
    });
    assert.equal(res.status, 200);
    const record = await waitForEnd(d, `pipelines/${id}`, 60_000);
    assert.equal(record.status, "error");
    assert.equal(record.errorMessage, "steps[0] (separate) failed: its job was cancelled");
    assert.deepEqual(
      (record.steps as StepRecord[]).map((s) => s.status),
      ["cancelled", "pending", "pending"],
    );
  });

  it("a worker killed mid-chain loses nothing: the pipeline resumes at the running step, a finished step is not run again", async () => {
    const id = await cover();
    await waitUntil("the convert step has started", async () => (await stepsOf(id))[1]?.jobId != null, 300_000);
    d.worker.kill("SIGKILL");
    d.worker = d.startWorker();
    const record = await waitForEnd(d, `pipelines/${id}`, 300_000);
    assert.equal(record.status, "success", record.errorMessage);
    const steps = record.steps as StepRecord[];
    assert.ok(steps.every((s) => s.status === "success"));
    // one job per step, no more: the separation that had finished ran once
    const pipelineInputs = { contains: `pipeline-${id}-step-` };
    assert.equal(await d.prisma.separationJob.count({ where: { inputKey: pipelineInputs } }), 1);
    assert.equal(await d.prisma.voiceConversionJob.count({ where: { inputKey: pipelineInputs } }), 1);
    const separation = await d.prisma.separationJob.findUniqueOrThrow({ where: { id: steps[0]!.jobId! } });
    assert.ok(
      separation.jobEndTime! <
        (await d.prisma.voiceConversionJob.findUniqueOrThrow({ where: { id: steps[1]!.jobId! } })).jobStartTime,
    );
    // each step's job counted once in the key's usage
    // (a row id is per table: another test's separation may share the conversion's id)
    const usage = await d.prisma.usageRecord.findMany({
      where: {
        OR: [
          { jobKind: "vocal_separation", rowId: steps[0]!.jobId! },
          { jobKind: "voice_conversion", rowId: steps[1]!.jobId! },
        ],
      },
    });
    assert.deepEqual(usage.map((u) => u.jobKind).sort(), ["vocal_separation", "voice_conversion"]);
    const delivered = await d.prisma.webhookDelivery.count({ where: { rowId: id, jobKind: "pipeline" } });
    assert.equal(delivered, 0, "no webhookUrl, no delivery");
  });

  it("a worker killed in the first step, Redis restarted and PostgreSQL away for a while: each step runs once and the pipeline succeeds", async () => {
    const id = await cover();
    await waitUntil("the separation step is under way", async () => {
      const [first] = await stepsOf(id);
      if (first?.jobId == null) return false;
      return (await d.prisma.separationJob.findUniqueOrThrow({ where: { id: first.jobId } })).progress > 0;
    });
    d.worker.kill("SIGKILL");
    d.worker = d.startWorker();
    await waitUntil("the convert step has started", async () => (await stepsOf(id))[1]?.jobId != null, 300_000);
    await d.stack.redis.restart();
    await d.stack.postgres.halt();
    await new Promise((r) => setTimeout(r, 3_000));
    await d.stack.postgres.resume();
    const record = await waitForEnd(d, `pipelines/${id}`, 300_000);
    assert.equal(record.status, "success", record.errorMessage);
    const inputs = { contains: `pipeline-${id}-step-` };
    assert.equal(await d.prisma.separationJob.count({ where: { inputKey: inputs } }), 1);
    assert.equal(await d.prisma.voiceConversionJob.count({ where: { inputKey: inputs } }), 1);
    const steps = record.steps as StepRecord[];
    const conversion = await getJson(d, `voice-conversions/${steps[1]!.jobId}`);
    assert.equal(typeof conversion.recombinedAudioFileUrl, "string");
  });
});
