import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { Readable } from "node:stream";
import { promisify } from "node:util";
import { publicBaseUrl } from "@mixdown/config";
import { testFilesDir } from "@mixdown/devstack";
import { bullJobId } from "@mixdown/queue";
import { writeRvcSignatureModel } from "@mixdown/voice";
import {
  assertUnchanged,
  audio,
  footprint,
  multipart,
  sortedKeys,
  startHarness,
  TIMESTAMP,
  type FilePart,
  type Harness,
} from "./helpers.ts";

const run = promisify(execFile);

let h: Harness;
let me: Awaited<ReturnType<Harness["newCaller"]>>;
let stranger: Awaited<ReturnType<Harness["newCaller"]>>;
let publicModel: number;
let myModel: number;
let strangersModel: number;
let pendingModel: number;
let rvc48k: number;
let native48k: number;

before(async () => {
  h = await startHarness("s3");
  me = await h.newCaller("me");
  stranger = await h.newCaller("stranger");
  publicModel = (
    await h.createModel({
      title: "Public Alto",
      tags: ["female", "pop"],
      imageUrl: "https://img.example/alto.png",
      twitterLink: "https://x.com/alto",
    })
  ).id;
  myModel = (await h.createModel({ title: "My Tenor", ownerId: me.callerId })).id;
  strangersModel = (await h.createModel({ title: "Their Bass", ownerId: stranger.callerId })).id;
  pendingModel = (await h.createModel({ title: "Unfinished", ownerId: me.callerId, state: "pending" })).id;
  rvc48k = (await h.createModel({ title: "RVC", architecture: "rvc", sampleRate: 40000 })).id;
  native48k = (await h.createModel({ title: "Native 48k", sampleRate: 48000 })).id;
});
after(async () => {
  await h?.stop();
});

const MODEL_KEYS = [
  "architecture",
  "createdAt",
  "demoUrl",
  "errorMessage",
  "id",
  "imageUrl",
  "instagramLink",
  "instrument",
  "isUsable",
  "missingAssets",
  "public",
  "sampleRate",
  "spotifyLink",
  "state",
  "tags",
  "tiktokLink",
  "title",
  "twitterLink",
  "usable",
  "youtubeLink",
];

/** A small picture in the given format, made by ffmpeg. */
async function image(ext: "png" | "jpg" | "webp" | "gif"): Promise<Buffer> {
  const { stdout } = await run(
    "ffmpeg",
    [
      "-v",
      "error",
      "-f",
      "lavfi",
      "-i",
      "testsrc=s=64x48",
      "-frames:v",
      "1",
      "-f",
      ext === "jpg" ? "mjpeg" : ext === "png" ? "image2pipe" : ext,
      ...(ext === "png" ? ["-c:v", "png"] : []),
      "-",
    ],
    {
      encoding: "buffer",
    },
  );
  return stdout as unknown as Buffer;
}

function expectError(res: { statusCode: number; json(): any; body: string }, status: number, message: RegExp): void {
  assert.equal(res.statusCode, status, res.body);
  const body = res.json();
  assert.deepEqual(sortedKeys(body), ["error", "message", "statusCode"]);
  assert.equal(body.statusCode, status);
  assert.match(body.message, message);
}

describe("voice conversions", () => {
  async function convert(
    fields: Record<string, string | number>,
    files?: Array<{ name: string; content: Buffer; filename?: string }>,
  ) {
    const parts = (files ?? [{ name: "soundFile", content: await audio("wav") }]).map((f) => ({ filename: "voice.wav", ...f }));
    const form = multipart(fields, parts);
    return h.app.inject({
      method: "POST",
      url: "/api/kits/v1/voice-conversions",
      headers: { ...form.headers, ...me.auth },
      payload: form.payload,
    });
  }

  test("creates a job: 201, the interface's fields plus outputs, model, progress; row, objects and queue entry", async () => {
    const res = await convert(
      {
        voiceModelId: myModel,
        conversionStrength: 0,
        modelVolumeMix: 1,
        pitchShift: -24,
        pre: JSON.stringify({ noiseGate: { threshold_db: -40 }, highPassFilter: {} }),
        post: JSON.stringify({ reverb: { width: 1 } }),
      },
      [
        { name: "soundFile", content: await audio("mp3"), filename: "take.wav" },
        { name: "backingSoundFile", content: await audio("flac"), filename: "backing.mp3" },
      ],
    );
    assert.equal(res.statusCode, 201, res.body);
    const record = res.json();
    assert.deepEqual(sortedKeys(record), [
      "createdAt",
      "errorMessage",
      "id",
      "jobEndTime",
      "jobStartTime",
      "lossyOutputFileUrl",
      "model",
      "outputFileUrl",
      "outputsExpireAt",
      "outputsExpiredAt",
      "progress",
      "recombinedAudioFileUrl",
      "status",
      "type",
      "voiceModelId",
    ]);
    assert.equal(record.type, "infer");
    assert.equal(record.status, "running");
    assert.equal(record.voiceModelId, myModel);
    assert.match(record.createdAt, TIMESTAMP);
    assert.match(record.jobStartTime, TIMESTAMP);
    assert.equal(record.jobEndTime, null);
    assert.equal(record.outputFileUrl, null);
    assert.equal(record.lossyOutputFileUrl, null);
    assert.equal(record.recombinedAudioFileUrl, null);
    assert.deepEqual(sortedKeys(record.model), MODEL_KEYS);
    assert.equal(record.model.id, myModel);

    const row = await h.prisma.voiceConversionJob.findUnique({ where: { id: record.id } });
    assert.equal(row?.inputFormat, "mp3");
    assert.match(row!.backingKey!, /^uploads\/voice-conversion\/.+\.flac$/);
    assert.equal(await h.app.ctx.storage.exists(row!.inputKey), true);
    assert.equal(await h.app.ctx.storage.exists(row!.backingKey!), true);
    assert.deepEqual(row?.params, {
      conversionStrength: 0,
      modelVolumeMix: 1,
      pitchShift: -24,
      pre: {
        noiseGate: { threshold_db: -40, ratio: 10, attack_ms: 1, release_ms: 100 },
        highPassFilter: { cutoff_frequency_hz: 80 },
      },
      post: { reverb: { room_size: 0.5, damping: 0.5, wet_level: 0.33, dry_level: 0.4, width: 1, freeze_mode: 0 } },
    });
    assert.notEqual(row?.enqueuedAt, null);
    const job = await h.app.ctx.queues.queue("voice-conversion").getJob(bullJobId("voice-conversion", record.id));
    assert.deepEqual(job?.data, { jobId: record.id });

    const fetched = await h.app.inject({ method: "GET", url: `/api/kits/v1/voice-conversions/${record.id}`, headers: me.auth });
    assert.deepEqual(fetched.json(), record);
    const list = (await h.app.inject({ method: "GET", url: "/api/kits/v1/voice-conversions", headers: me.auth })).json();
    assert.deepEqual(list.data, [record]);
    assert.equal(list.meta.total, 1);
    const theirs = await h.app.inject({
      method: "GET",
      url: `/api/kits/v1/voice-conversions/${record.id}`,
      headers: stranger.auth,
    });
    expectError(theirs, 404, /voice conversion \d+ not found/);
    assert.equal(
      (await h.app.inject({ method: "GET", url: "/api/kits/v1/voice-conversions", headers: stranger.auth })).json().meta.total,
      0,
    );
  });

  test("defaults fill omitted parameters; a public model is usable; the upper bounds are accepted", async () => {
    const res = await convert({ voiceModelId: publicModel, pitchShift: 24, conversionStrength: 1, modelVolumeMix: 0 });
    assert.equal(res.statusCode, 201, res.body);
    const row = await h.prisma.voiceConversionJob.findUnique({ where: { id: res.json().id } });
    assert.deepEqual(row?.params, { conversionStrength: 1, modelVolumeMix: 0, pitchShift: 24, pre: {}, post: {} });
  });

  test("effects named as the hosted documentation names them (NoiseGate, Reverb, ...) are the same effects, stored under Mixdown's names", async () => {
    const res = await convert({
      voiceModelId: publicModel,
      pre: JSON.stringify({ NoiseGate: { threshold_db: -40 }, HighPassFilter: {} }),
      post: JSON.stringify({ Reverb: { room_size: 0.8 }, Delay: true }),
    });
    assert.equal(res.statusCode, 201, res.body);
    const row = await h.prisma.voiceConversionJob.findUnique({ where: { id: res.json().id } });
    const params = row?.params as { pre: Record<string, unknown>; post: Record<string, unknown> };
    // jsonb keeps keys in its own order (shorter first): compare the sets.
    assert.deepEqual(Object.keys(params.pre).sort(), ["highPassFilter", "noiseGate"]);
    assert.deepEqual(Object.keys(params.post).sort(), ["delay", "reverb"]);
    assert.equal((params.post.reverb as { room_size: number }).room_size, 0.8);
  });

  const invalid: Array<[string, Record<string, string | number>, RegExp]> = [
    ["conversionStrength below 0", { conversionStrength: -0.1 }, /conversionStrength must be between 0 and 1/],
    ["conversionStrength above 1", { conversionStrength: 1.01 }, /conversionStrength must be between 0 and 1/],
    ["conversionStrength not a number", { conversionStrength: "strong" }, /conversionStrength must be a number/],
    ["modelVolumeMix above 1", { modelVolumeMix: 2 }, /modelVolumeMix must be between 0 and 1/],
    ["modelVolumeMix below 0", { modelVolumeMix: -1 }, /modelVolumeMix must be between 0 and 1/],
    ["pitchShift below -24", { pitchShift: -25 }, /pitchShift must be between -24 and 24/],
    ["pitchShift above 24", { pitchShift: 24.5 }, /pitchShift must be between -24 and 24/],
    ["pre with an unknown effect", { pre: JSON.stringify({ distortion: {} }) }, /pre\.distortion is not a known pre effect/],
    ["post effect used as pre", { pre: JSON.stringify({ reverb: {} }) }, /pre\.reverb is not a known pre effect/],
    [
      "pre parameter out of range",
      { pre: JSON.stringify({ noiseGate: { threshold_db: 10 } }) },
      /pre\.noiseGate\.threshold_db must be between -100 and 0/,
    ],
    [
      "pre unknown parameter",
      { pre: JSON.stringify({ compressor: { knee: 3 } }) },
      /pre\.compressor\.knee is not a parameter of compressor/,
    ],
    [
      "post parameter out of range",
      { post: JSON.stringify({ reverb: { width: 2 } }) },
      /post\.reverb\.width must be between 0 and 1/,
    ],
    ["post parameter not a number", { post: JSON.stringify({ delay: { mix: "half" } }) }, /post\.delay\.mix must be a number/],
    ["pre not JSON", { pre: "{noiseGate" }, /pre must be a JSON object/],
    ["post an array", { post: "[]" }, /post must be a JSON object/],
  ];
  for (const [name, fields, message] of invalid) {
    test(`${name} → 422 naming it, nothing stored`, async () => {
      const before = await footprint(h);
      expectError(await convert({ voiceModelId: publicModel, ...fields }), 422, message);
      await assertUnchanged(h, before);
    });
  }

  test("voice model checks: missing, malformed, unknown, someone else's, not ready → 422 naming voiceModelId", async () => {
    const before = await footprint(h);
    expectError(await convert({}), 422, /voiceModelId is required/);
    expectError(await convert({ voiceModelId: "abc" }), 422, /voiceModelId must be a positive integer/);
    expectError(
      await convert({ voiceModelId: 999999 }),
      422,
      /voiceModelId: voice model 999999 does not exist or is not available/,
    );
    expectError(
      await convert({ voiceModelId: strangersModel }),
      422,
      new RegExp(`voiceModelId: voice model ${strangersModel} does not exist`),
    );
    expectError(await convert({ voiceModelId: pendingModel }), 422, /is not usable yet \(state pending\)/);
    await assertUnchanged(h, before);
  });

  test("formats: webm is rejected for conversions (415), text named .wav too; a missing soundFile is 422", async () => {
    const before = await footprint(h);
    expectError(
      await convert({ voiceModelId: publicModel }, [{ name: "soundFile", content: await audio("webm"), filename: "a.wav" }]),
      415,
      /soundFile must be wav, mp3 or flac audio.*got webm/,
    );
    expectError(
      await convert({ voiceModelId: publicModel }, [{ name: "soundFile", content: Buffer.from("not audio".repeat(50)) }]),
      415,
      /soundFile must be wav, mp3 or flac/,
    );
    expectError(
      await convert({ voiceModelId: publicModel }, [
        { name: "soundFile", content: await audio("wav") },
        { name: "backingSoundFile", content: await audio("webm") },
      ]),
      415,
      /backingSoundFile must be wav, mp3 or flac/,
    );
    expectError(await convert({ voiceModelId: publicModel }, []), 422, /soundFile is required/);
    await assertUnchanged(h, before);
  });
});

describe("voice blender", () => {
  const blend = (body: unknown, auth = me.auth) =>
    h.app.inject({ method: "POST", url: "/api/kits/v1/voice-blender", headers: auth, payload: body as object });

  test("two models: 201, alpha2 = 1 - alpha, no keys for models not given, output model pending and owned", async () => {
    const res = await blend({ modelId1: publicModel, modelId2: myModel, alpha: 0.7 });
    assert.equal(res.statusCode, 201, res.body);
    const record = res.json();
    assert.deepEqual(sortedKeys(record), [
      "alpha",
      "alpha2",
      "createdAt",
      "errorMessage",
      "id",
      "jobEndTime",
      "jobStartTime",
      "model1Id",
      "model2Id",
      "outputModelId",
      "progress",
      "status",
      "title",
    ]);
    assert.equal(record.status, "running");
    assert.equal(record.alpha, 0.7);
    assert.equal(record.alpha2, 0.3);
    assert.equal(record.model1Id, publicModel);
    assert.equal(record.model2Id, myModel);
    assert.equal(record.title, "Blend of Public Alto and My Tenor");
    assert.equal(typeof record.outputModelId, "number");
    const output = await h.prisma.voiceModel.findUnique({ where: { id: record.outputModelId } });
    assert.equal(output?.state, "pending");
    assert.equal(output?.ownerId, me.callerId);
    assert.equal(output?.architecture, "native");
    assert.equal(output?.sampleRate, 40000);
    assert.equal(output?.title, record.title);
    const job = await h.app.ctx.queues.queue("voice-blend").getJob(bullJobId("voice-blend", record.id));
    assert.deepEqual(job?.data, { jobId: record.id });

    const fetched = await h.app.inject({ method: "GET", url: `/api/kits/v1/voice-blender/${record.id}`, headers: me.auth });
    assert.deepEqual(fetched.json(), record);
    expectError(
      await h.app.inject({ method: "GET", url: `/api/kits/v1/voice-blender/${record.id}`, headers: stranger.auth }),
      404,
      /not found/,
    );
    const model = await h.app.inject({
      method: "GET",
      url: `/api/kits/v1/voice-models/${record.outputModelId}`,
      headers: me.auth,
    });
    assert.equal(model.json().usable, false, "the output model is not usable before the job succeeds");
    assert.equal(model.json().isUsable, false, "isUsable is usable under the hosted service's name");
  });

  test("list: the caller's blends only, oldest first by default (as every list), paged with the interface's meta; 401 without a key; 422 past perPage's limit", async () => {
    const before = (
      await h.app.inject({ method: "GET", url: "/api/kits/v1/voice-blender?perPage=100", headers: me.auth })
    ).json();
    const mine: Array<{ id: number }> = [];
    for (const alpha of [0.2, 0.4, 0.6]) mine.push((await blend({ modelId1: publicModel, modelId2: myModel, alpha })).json());
    const other = await h.newCaller();
    const theirs = (await blend({ modelId1: publicModel, modelId2: publicModel, alpha: 0.5 }, other.auth)).json();
    const total = before.meta.total + 3;

    const first = await h.app.inject({ method: "GET", url: "/api/kits/v1/voice-blender?perPage=2&order=desc", headers: me.auth });
    assert.equal(first.statusCode, 200, first.body);
    const page1 = first.json();
    assert.deepEqual(page1.data, [mine[2], mine[1]]);
    const base = "/api/kits/v1/voice-blender";
    assert.deepEqual(page1.meta, {
      currentPage: 1,
      firstPage: 1,
      firstPageUrl: `${base}?page=1&perPage=2&order=desc`,
      lastPage: Math.ceil(total / 2),
      lastPageUrl: `${base}?page=${Math.ceil(total / 2)}&perPage=2&order=desc`,
      nextPageUrl: `${base}?page=2&perPage=2&order=desc`,
      perPage: 2,
      previousPageUrl: null,
      total,
    });
    const page2 = (await h.app.inject({ method: "GET", url: `${base}?page=2&perPage=2&order=desc`, headers: me.auth })).json();
    assert.deepEqual(page2.data[0], mine[0]);
    const asc = (await h.app.inject({ method: "GET", url: `${base}?perPage=100`, headers: me.auth })).json();
    assert.deepEqual(asc.data.slice(-3), mine);
    assert.ok(asc.data.every((r: { id: number }) => r.id !== theirs.id));
    const strangers = (await h.app.inject({ method: "GET", url: `${base}?perPage=100`, headers: other.auth })).json();
    assert.ok(strangers.data.some((r: { id: number }) => r.id === theirs.id));
    assert.ok(strangers.data.every((r: { id: number }) => !mine.some((m) => m.id === r.id)));

    expectError(await h.app.inject({ method: "GET", url: base }), 401, /Authorization/);
    expectError(await h.app.inject({ method: "GET", url: `${base}?perPage=100000`, headers: me.auth }), 422, /perPage/);
  });

  test("a conversion asked of the output model before the blend succeeds → 422 naming it, nothing stored", async () => {
    const created = await blend({ modelId1: publicModel, modelId2: myModel, alpha: 0.5 });
    assert.equal(created.statusCode, 201, created.body);
    const { outputModelId } = created.json();
    const before = await footprint(h);
    const form = multipart({ voiceModelId: outputModelId }, [
      { name: "soundFile", content: await audio("wav"), filename: "voice.wav" },
    ]);
    const res = await h.app.inject({
      method: "POST",
      url: "/api/kits/v1/voice-conversions",
      headers: { ...form.headers, ...me.auth },
      payload: form.payload,
    });
    expectError(res, 422, new RegExp(`voiceModelId: voice model ${outputModelId} is not usable yet \\(state pending\\)`));
    await assertUnchanged(h, before);
  });

  test("three models: alpha3 computed; four models: alpha4 computed; a custom title is kept", async () => {
    const three = await blend({
      modelId1: publicModel,
      modelId2: myModel,
      modelId3: publicModel,
      alpha: 0.5,
      alpha2: 0.25,
      title: "Trio",
    });
    assert.equal(three.statusCode, 201, three.body);
    const r3 = three.json();
    assert.equal(r3.alpha3, 0.25);
    assert.equal(r3.model3Id, publicModel);
    assert.equal(r3.title, "Trio");
    assert.ok(!("alpha4" in r3) && !("model4Id" in r3));
    const four = await blend({
      modelId1: myModel,
      modelId2: publicModel,
      modelId3: myModel,
      modelId4: publicModel,
      alpha: 0.1,
      alpha2: 0.2,
      alpha3: 0.3,
    });
    assert.equal(four.statusCode, 201, four.body);
    const r4 = four.json();
    assert.equal(r4.alpha4, 0.4);
    assert.equal(r4.model4Id, publicModel);
    assert.equal(r4.title, "Blend of My Tenor, Public Alto, My Tenor and Public Alto");
    const edge = await blend({ modelId1: myModel, modelId2: publicModel, modelId3: myModel, alpha: 0.7, alpha2: 0.3 });
    assert.equal(edge.statusCode, 201);
    assert.equal(edge.json().alpha3, 0);
  });

  const rules: Array<[string, Record<string, unknown>, RegExp]> = [
    ["rule 1: one model", { modelId1: 1, alpha: 0.5 }, /modelId2 is required/],
    [
      "rule 1: modelId4 without modelId3",
      { modelId1: 1, modelId2: 2, modelId4: 3, alpha: 0.5, alpha2: 0.2 },
      /modelId4 requires modelId3/,
    ],
    [
      "rule 2: three models without alpha2",
      { modelId1: 1, modelId2: 2, modelId3: 3, alpha: 0.5 },
      /alpha2 is required with 3 models/,
    ],
    [
      "rule 2: four models without alpha3",
      { modelId1: 1, modelId2: 2, modelId3: 3, modelId4: 4, alpha: 0.1, alpha2: 0.1 },
      /alpha3 is required with 4 models/,
    ],
    [
      "rule 2/3: alpha2 given with two models",
      { modelId1: 1, modelId2: 2, alpha: 0.5, alpha2: 0.5 },
      /alpha2 must not be given with 2 models/,
    ],
    [
      "rule 2/3: alpha3 given with three models",
      { modelId1: 1, modelId2: 2, modelId3: 3, alpha: 0.2, alpha2: 0.2, alpha3: 0.2 },
      /alpha3 must not be given with 3 models/,
    ],
    [
      "rule 3: shares summing past 1",
      { modelId1: 1, modelId2: 2, modelId3: 3, alpha: 0.6, alpha2: 0.5 },
      /alpha \+ alpha2 = 1\.1 exceeds 1.*alpha3/,
    ],
    ["alpha is required", { modelId1: 1, modelId2: 2 }, /alpha is required/],
    ["alpha above 1", { modelId1: 1, modelId2: 2, alpha: 1.5 }, /alpha must be <= 1/],
    ["alpha below 0", { modelId1: 1, modelId2: 2, alpha: -0.1 }, /alpha must be >= 0/],
    ["alpha2 above 1", { modelId1: 1, modelId2: 2, modelId3: 3, alpha: 0.1, alpha2: 1.2 }, /alpha2 must be <= 1/],
    [
      "alpha3 below 0",
      { modelId1: 1, modelId2: 2, modelId3: 3, modelId4: 4, alpha: 0.1, alpha2: 0.1, alpha3: -1 },
      /alpha3 must be >= 0/,
    ],
    ["a non-numeric model id", { modelId1: "first", modelId2: 2, alpha: 0.5 }, /modelId1 must be integer/],
    [
      "extra field: alpha4 is never supplied",
      { modelId1: 1, modelId2: 2, modelId3: 3, modelId4: 4, alpha: 0.1, alpha2: 0.1, alpha3: 0.1, alpha4: 0.7 },
      /alpha4 must not be given/,
    ],
    [
      "extra field: a fifth model",
      { modelId1: 1, modelId2: 2, modelId3: 3, modelId4: 4, modelId5: 5, alpha: 0.1, alpha2: 0.1, alpha3: 0.1 },
      /modelId5: at most four models/,
    ],
    ["missing modelId1", { modelId2: 2, alpha: 0.5 }, /modelId1 is required/],
  ];
  for (const [name, body, message] of rules) {
    test(`${name} → 422`, async () => {
      const before = await footprint(h);
      expectError(await blend(body), 422, message);
      await assertUnchanged(h, before);
    });
  }

  test("models must exist, be visible, be ready and share architecture and sample rate → 422 naming them", async () => {
    const before = await footprint(h);
    expectError(
      await blend({ modelId1: publicModel, modelId2: 987654, alpha: 0.5 }),
      422,
      /modelId2: voice model 987654 does not exist/,
    );
    expectError(
      await blend({ modelId1: strangersModel, modelId2: publicModel, alpha: 0.5 }),
      422,
      new RegExp(`modelId1: voice model ${strangersModel} does not exist`),
    );
    expectError(await blend({ modelId1: publicModel, modelId2: pendingModel, alpha: 0.5 }), 422, /modelId2: .*not usable yet/);
    expectError(
      await blend({ modelId1: publicModel, modelId2: myModel, modelId3: rvc48k, alpha: 0.3, alpha2: 0.3 }),
      422,
      /modelId3: .*rvc model but modelId1 .* is native/,
    );
    expectError(
      await blend({ modelId1: publicModel, modelId2: native48k, alpha: 0.3 }),
      422,
      /modelId2: .*48000 Hz but modelId1 .* 40000 Hz/,
    );
    await assertUnchanged(h, before);
  });

  const cancelBlend = (id: number | string, auth = me.auth) =>
    h.app.inject({ method: "POST", url: `/api/kits/v1/voice-blender/${id}/cancel`, headers: auth });

  test("cancel of a queued blend: 200 cancelled, output model failed, queue entry removed; again → 409 naming the status; someone else's → 404", async () => {
    const created = (await blend({ modelId1: publicModel, modelId2: myModel, alpha: 0.5 })).json();
    const queue = h.app.ctx.queues.queue("voice-blend");
    assert.ok(await queue.getJob(bullJobId("voice-blend", created.id)), "queued before the cancel");
    expectError(await cancelBlend(created.id, stranger.auth), 404, new RegExp(`voice blender job ${created.id} not found`));

    const res = await cancelBlend(created.id);
    assert.equal(res.statusCode, 200, res.body);
    const record = res.json();
    assert.equal(record.status, "cancelled");
    assert.match(record.jobEndTime, TIMESTAMP);
    assert.equal(record.outputModelId, created.outputModelId);
    const model = await h.prisma.voiceModel.findUniqueOrThrow({ where: { id: created.outputModelId } });
    assert.equal(model.state, "failed", "a cancelled blend's output model ends failed");
    assert.equal(await queue.getJob(bullJobId("voice-blend", created.id)), undefined, "no worker will start it");

    expectError(await cancelBlend(created.id), 409, /voice blender job \d+ has already ended \(status cancelled\)/);
    expectError(await cancelBlend(999999), 404, /not found/);
    expectError(await cancelBlend("x1"), 404, /not found/);
  });

  test("a cancel racing the job's completion leaves exactly one end state", async () => {
    const { createJobTables } = await import("@mixdown/db");
    const table = createJobTables(h.prisma)["voice-blend"];
    for (let i = 0; i < 6; i++) {
      const created = (await blend({ modelId1: publicModel, modelId2: myModel, alpha: 0.5 })).json();
      const [completed, cancelled] = await Promise.all([
        table.complete(created.id, { fileKey: `voice-models/${created.outputModelId}/model.onnx`, details: { size: 1 } }),
        cancelBlend(created.id),
      ]);
      const job = await h.prisma.voiceBlendJob.findUniqueOrThrow({ where: { id: created.id } });
      const model = await h.prisma.voiceModel.findUniqueOrThrow({ where: { id: created.outputModelId } });
      if (completed) {
        assert.equal(cancelled.statusCode, 409, cancelled.body);
        assert.match(cancelled.json().message, /status success/);
        assert.deepEqual([job.status, model.state], ["success", "ready"]);
      } else {
        assert.equal(cancelled.statusCode, 200, cancelled.body);
        assert.deepEqual([job.status, model.state], ["cancelled", "failed"]);
      }
    }
  });

  test("malformed JSON or a non-JSON body → 400", async () => {
    const bad = await h.app.inject({
      method: "POST",
      url: "/api/kits/v1/voice-blender",
      headers: { ...me.auth, "content-type": "application/json" },
      payload: "{modelId1:",
    });
    expectError(bad, 400, /JSON/);
    const form = multipart({ modelId1: 1, modelId2: 2, alpha: 0.5 }, []);
    const multi = await h.app.inject({
      method: "POST",
      url: "/api/kits/v1/voice-blender",
      headers: { ...me.auth, ...form.headers },
      payload: form.payload,
    });
    expectError(multi, 400, /must be a JSON object \(Content-Type: application\/json\) or a urlencoded form/);
  });

  test("a urlencoded form of the same fields (curl -d) is taken as the JSON object is: numbers from their text, the same errors", async () => {
    const form = (fields: Record<string, string>) =>
      h.app.inject({
        method: "POST",
        url: "/api/kits/v1/voice-blender",
        headers: { ...me.auth, "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams(fields).toString(),
      });
    const res = await form({ modelId1: String(publicModel), modelId2: String(myModel), alpha: "0.25", title: "Form blend" });
    assert.equal(res.statusCode, 201, res.body);
    const record = res.json();
    assert.deepEqual(
      [record.model1Id, record.model2Id, record.alpha, record.alpha2, record.title],
      [publicModel, myModel, 0.25, 0.75, "Form blend"],
    );
    expectError(await form({ modelId1: String(publicModel), modelId2: String(myModel), alpha: "1.5" }), 422, /alpha/);
    expectError(await form({ modelId1: String(publicModel), alpha: "0.5" }), 422, /modelId2/);
  });
});

describe("voice models", () => {
  test("fetch: the record's fields, links null when unset, demoUrl the stable route until rendered; another caller's private model is 404", async () => {
    const res = await h.app.inject({ method: "GET", url: `/api/kits/v1/voice-models/${publicModel}`, headers: me.auth });
    assert.equal(res.statusCode, 200);
    const model = res.json();
    assert.deepEqual(sortedKeys(model), MODEL_KEYS);
    assert.deepEqual(
      { ...model, createdAt: undefined },
      {
        id: publicModel,
        title: "Public Alto",
        tags: ["female", "pop"],
        imageUrl: "https://img.example/alto.png",
        demoUrl: `${publicBaseUrl(h.config)}/api/kits/v1/voice-models/${publicModel}/demo`,
        twitterLink: "https://x.com/alto",
        instagramLink: null,
        instrument: false,
        isUsable: true,
        tiktokLink: null,
        spotifyLink: null,
        youtubeLink: null,
        architecture: "native",
        sampleRate: 40000,
        state: "ready",
        usable: true,
        errorMessage: null,
        public: true,
        createdAt: undefined,
        missingAssets: [],
      },
    );
    assert.match(model.createdAt, TIMESTAMP);
    assert.equal(
      (await h.app.inject({ method: "GET", url: `/api/kits/v1/voice-models/${myModel}`, headers: me.auth })).json().public,
      false,
    );
    expectError(
      await h.app.inject({ method: "GET", url: `/api/kits/v1/voice-models/${strangersModel}`, headers: me.auth }),
      404,
      /voice model \d+ not found/,
    );
  });

  test("media routes: 302 to the owner's link or the signed object, 409 with Retry-After until rendered, 404 when it never will be", async () => {
    const media = (id: number, which: "image" | "demo", auth = me.auth) =>
      h.app.inject({ method: "GET", url: `/api/kits/v1/voice-models/${id}/${which}`, headers: auth });
    const linked = await media(publicModel, "image");
    assert.equal(linked.statusCode, 302);
    assert.equal(linked.headers.location, "https://img.example/alto.png");

    const waiting = await media(publicModel, "demo");
    expectError(waiting, 409, /demo of voice model \d+ does not exist yet \(the worker is rendering it\)/);
    assert.equal(waiting.headers["retry-after"], "5");
    expectError(await media(pendingModel, "image"), 409, /not ready yet/);
    expectError(await media(strangersModel, "demo"), 404, /voice model \d+ not found/);

    const rendered = (await h.createModel({ title: "Rendered", demoKey: "voice-models/rendered/demo.mp3", mediaError: null })).id;
    await h.app.ctx.storage.putStream("voice-models/rendered/demo.mp3", Readable.from([await audio("mp3")]));
    const record = (await h.app.inject({ method: "GET", url: `/api/kits/v1/voice-models/${rendered}`, headers: me.auth })).json();
    const redirect = await media(rendered, "demo");
    assert.equal(redirect.statusCode, 302);
    assert.match(redirect.headers.location as string, /voice-models\/rendered\/demo\.mp3/);
    assert.match(record.demoUrl, /voice-models\/rendered\/demo\.mp3/, "a rendered demo is presented as its signed URL");
    assert.equal((await fetch(redirect.headers.location as string)).status, 200);

    const broken = (await h.createModel({ title: "Broken", mediaError: "the model file is missing" })).id;
    expectError(await media(broken, "image"), 404, /could not be rendered: the model file is missing/);
  });

  test("import with an image part: PNG, JPEG and WebP are stored as the cover and the media job is queued", async () => {
    const modelFile = await readFile(new URL("../../../models/voices/native-aria.onnx", import.meta.url));
    for (const [ext, contentType] of [
      ["png", "image/png"],
      ["jpg", "image/jpeg"],
      ["webp", "image/webp"],
    ] as const) {
      const picture = await image(ext);
      const { payload, headers } = multipart({ metadata: JSON.stringify({ title: `Cover ${ext}` }) }, [
        { name: "modelFile", filename: "voice.onnx", content: modelFile },
        { name: "image", filename: "cover.bin", content: picture },
      ]);
      const res = await h.app.inject({
        method: "POST",
        url: "/api/kits/v1/voice-models",
        payload,
        headers: { ...headers, ...me.auth },
      });
      assert.equal(res.statusCode, 201, res.body);
      const model = res.json();
      const row = await h.prisma.voiceModel.findUniqueOrThrow({ where: { id: model.id } });
      assert.equal(row.imageKey, `voice-models/${model.id}/cover.${ext}`);
      assert.match(model.imageUrl, new RegExp(`voice-models/${model.id}/cover\\.${ext}`));
      assert.equal(
        model.demoUrl,
        `${publicBaseUrl(h.config)}/api/kits/v1/voice-models/${model.id}/demo`,
        "the demo is not rendered yet: the stable route",
      );
      const served = await fetch(model.imageUrl);
      assert.equal(served.headers.get("content-type"), contentType);
      assert.deepEqual(Buffer.from(await served.arrayBuffer()), picture);
      assert.equal(
        await h.app.ctx.queues.queue("voice-model-media").getJobState(bullJobId("voice-model-media", model.id)),
        "waiting",
      );
      assert.notEqual(row.mediaEnqueuedAt, null);
    }
  });

  const rvcIndexFixture = (name: string) =>
    readFile(new URL(`../../../packages/voice/test/fixtures/rvc-index/${name}`, import.meta.url));
  const importRvc = async (caller: { auth: { authorization: string } }, parts: FilePart[]) => {
    const { payload, headers } = multipart({ metadata: JSON.stringify({ title: "RVC with index", sampleRate: 48000 }) }, parts);
    return h.app.inject({ method: "POST", url: "/api/kits/v1/voice-models", payload, headers: { ...headers, ...caller.auth } });
  };

  test("import of an RVC model with its indexFile: the index is stored beside the model and named in the row's metadata", async () => {
    const index = await rvcIndexFixture("ivf-flat.index");
    const res = await importRvc(me, [
      { name: "modelFile", filename: "voice.onnx", content: Buffer.from(writeRvcSignatureModel(48000)) },
      { name: "indexFile", filename: "added_IVF76_Flat_nprobe_1_voice_v2.index", content: index },
    ]);
    assert.equal(res.statusCode, 201, res.body);
    const row = await h.prisma.voiceModel.findUniqueOrThrow({ where: { id: res.json().id } });
    assert.equal(row.architecture, "rvc");
    assert.deepEqual(row.metadata, {
      source: "upload",
      rvc: { version: "v2" },
      indexKey: `voice-models/${row.id}/model.index`,
      index: { dim: 64, vectors: 3000, lists: 76 },
    });
    const stored = path.join(await testFilesDir("index-"), "stored.index");
    await h.app.ctx.storage.downloadToFile(`voice-models/${row.id}/model.index`, stored);
    assert.deepEqual(await readFile(stored), index);
  });

  test("import rejects an indexFile that is not RVC's IVF-Flat index, or without an RVC modelFile (422 naming it), and stores nothing", async () => {
    const caller = await h.newCaller();
    const rvc = { name: "modelFile", filename: "voice.onnx", content: Buffer.from(writeRvcSignatureModel(40000)) };
    const native = {
      name: "modelFile",
      filename: "voice.onnx",
      content: await readFile(new URL("../../../models/voices/native-aria.onnx", import.meta.url)),
    };
    const whole = await rvcIndexFixture("ivf-flat.index");
    for (const [parts, message] of [
      [
        [rvc, { name: "indexFile", filename: "flat.index", content: await rvcIndexFixture("flat-l2.index") }],
        /indexFile: the file is a faiss IndexFlatL2 \(IxF2\); RVC's feature index is an IndexIVFFlat/,
      ],
      [
        [rvc, { name: "indexFile", filename: "cut.index", content: whole.subarray(0, whole.length - 10) }],
        /indexFile: the file ends early \(truncated index\)/,
      ],
      [
        [rvc, { name: "indexFile", filename: "notes.index", content: Buffer.from("not an index at all") }],
        /indexFile: the file is not a faiss index/,
      ],
      [
        [native, { name: "indexFile", filename: "a.index", content: whole }],
        /indexFile: only RVC voice models take a feature index/,
      ],
      [
        [
          { name: "referenceFile", filename: "me.wav", content: await audio("wav") },
          { name: "indexFile", filename: "a.index", content: whole },
        ],
        /indexFile goes with an RVC modelFile/,
      ],
    ] as const) {
      const before = await footprint(h);
      expectError(await importRvc(caller, [...parts] as FilePart[]), 422, message);
      await assertUnchanged(h, before);
    }
  });

  test("import of an RVC .pth: identified from its own config, stored with its index, pending, and a voice-model-build job queued", async () => {
    const pth = await readFile(new URL("../../../packages/voice/test/fixtures/rvc-pth/rvc-v1-40k.pth", import.meta.url));
    const res = await importRvc(me, [
      { name: "modelFile", filename: "singer.pth", content: pth },
      { name: "indexFile", filename: "added.index", content: await rvcIndexFixture("ivf-flat.index") },
    ]);
    assert.equal(res.statusCode, 201, res.body);
    const model = res.json();
    assert.deepEqual([model.architecture, model.sampleRate, model.state], ["rvc", 40000, "pending"]);
    const row = await h.prisma.voiceModel.findUniqueOrThrow({ where: { id: model.id } });
    assert.equal(row.referenceKey, `voice-models/${model.id}/model.pth`);
    assert.equal(row.fileKey, null);
    assert.deepEqual(row.metadata, {
      source: "upload",
      format: "pth",
      rvc: { version: "v1", f0: 1, sampleRate: 40000, speakers: 3 },
      indexKey: `voice-models/${model.id}/model.index`,
      index: { dim: 64, vectors: 3000, lists: 76 },
    });
    assert.equal(
      await h.app.ctx.queues.queue("voice-model-build").getJobState(bullJobId("voice-model-build", model.id)),
      "waiting",
    );
  });

  test("import rejects a PyTorch file that is not an RVC voice model, or a broken one (422 naming it), and stores nothing", async () => {
    const caller = await h.newCaller();
    const demucs = await readFile(
      new URL("../../../packages/separation/test/fixtures/import-probes/htdemucs.th", import.meta.url),
    );
    const pth = await readFile(new URL("../../../packages/voice/test/fixtures/rvc-pth/rvc-v2-48k.pth", import.meta.url));
    for (const [content, message] of [
      [demucs, /modelFile: not an RVC voice model: expected RVC's exported \.pth \(a dict with weight and config\)/],
      [pth.subarray(0, 2000), /^modelFile: not a readable zip \(.*truncated/],
    ] as const) {
      const before = await footprint(h);
      expectError(
        await importRvc(caller, [{ name: "modelFile", filename: "model.pth", content: Buffer.from(content) }]),
        422,
        message,
      );
      await assertUnchanged(h, before);
    }
  });

  test("import rejects an image part that is not PNG/JPEG/WebP (422) or too large (413), naming the field, and stores nothing", async () => {
    const modelFile = await readFile(new URL("../../../models/voices/native-aria.onnx", import.meta.url));
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>');
    const huge = Buffer.concat([await image("png"), Buffer.alloc(h.config.MAX_VOICE_MODEL_IMAGE_BYTES)]);
    // A caller of its own: these writes must not meet the write rate limit of the tests before.
    const caller = await h.newCaller();
    for (const [content, status, message] of [
      [await image("gif"), 422, /image must be a PNG, JPEG or WebP image \(it is gif\)/],
      [svg, 422, /image must be a PNG, JPEG or WebP image/],
      [
        Buffer.from("\x89PNG\r\n\x1a\n but then nothing of a PNG at all", "latin1"),
        422,
        /image must be a PNG, JPEG or WebP image/,
      ],
      [huge, 413, /image exceeds the maximum upload size of 5 MB/],
    ] as const) {
      const before = await footprint(h);
      const { payload, headers } = multipart({ metadata: JSON.stringify({ title: "Rejected cover" }) }, [
        { name: "modelFile", filename: "voice.onnx", content: modelFile },
        { name: "image", filename: "cover.png", content, contentType: "image/png" },
      ]);
      expectError(
        await h.app.inject({
          method: "POST",
          url: "/api/kits/v1/voice-models",
          payload,
          headers: { ...headers, ...caller.auth },
        }),
        status,
        message,
      );
      await assertUnchanged(h, before);
    }
  });

  test("instrument models: marked at import (metadata.instrument), instruments=true lists only them, false only voices (kept in page URLs); a bad flag → 422, nothing stored", async () => {
    const modelFile = await readFile(new URL("../../../models/voices/native-aria.onnx", import.meta.url));
    const caller = await h.newCaller();
    const importModel = (metadata: Record<string, unknown>) => {
      const { payload, headers } = multipart({ metadata: JSON.stringify(metadata) }, [
        { name: "modelFile", filename: "voice.onnx", content: modelFile },
      ]);
      return h.app.inject({
        method: "POST",
        url: "/api/kits/v1/voice-models",
        payload,
        headers: { ...headers, ...caller.auth },
      });
    };
    const violin = await importModel({ title: "Violin", instrument: true });
    assert.equal(violin.statusCode, 201, violin.body);
    assert.equal(violin.json().instrument, true);
    const voice = await importModel({ title: "Plain voice", instrument: false });
    assert.equal(voice.json().instrument, false);
    const before = await h.prisma.voiceModel.count();
    expectError(await importModel({ title: "Flute", instrument: "yes" }), 422, /metadata\.instrument must be true/);
    assert.equal(await h.prisma.voiceModel.count(), before);

    const list = (query: string) =>
      h.app
        .inject({ method: "GET", url: `/api/kits/v1/voice-models?perPage=100&${query}`, headers: caller.auth })
        .then((r) => r.json());
    const all = (await list("")).data.map((m: { id: number }) => m.id);
    const instruments = await list("instruments=true");
    const voices = await list("instruments=false");
    assert.deepEqual(
      instruments.data.map((m: { id: number }) => m.id),
      [violin.json().id],
    );
    assert.ok(voices.data.every((m: { instrument: boolean }) => m.instrument === false));
    assert.equal(voices.meta.total + instruments.meta.total, all.length);
    assert.ok(voices.data.some((m: { id: number }) => m.id === publicModel));
    assert.equal(instruments.meta.firstPageUrl, "/api/kits/v1/voice-models?page=1&perPage=100&order=asc&instruments=true");
    const ownInstruments = await list("myModels=true&instruments=true");
    assert.equal(
      ownInstruments.meta.firstPageUrl,
      "/api/kits/v1/voice-models?page=1&perPage=100&order=asc&myModels=true&instruments=true",
    );
    assert.equal(ownInstruments.meta.total, 1);

    // A blend of instruments is an instrument; a blend with a voice in it is a voice.
    const flute = await importModel({ title: "Flute", instrument: true });
    const blendOutput = async (modelId2: number) => {
      const res = await h.app.inject({
        method: "POST",
        url: "/api/kits/v1/voice-blender",
        headers: caller.auth,
        payload: { modelId1: violin.json().id, modelId2, alpha: 0.5 },
      });
      assert.equal(res.statusCode, 201, res.body);
      return h.prisma.voiceModel.findUniqueOrThrow({ where: { id: res.json().outputModelId } });
    };
    assert.equal((await blendOutput(flute.json().id)).instrument, true, "violin + flute");
    assert.equal((await blendOutput(voice.json().id)).instrument, false, "violin + a voice");
    expectError(
      await h.app.inject({ method: "GET", url: "/api/kits/v1/voice-models?instruments=maybe", headers: caller.auth }),
      422,
      /instruments/,
    );
  });

  test("list: the public catalogue plus own models; myModels=true only own (kept in page URLs)", async () => {
    const all = (
      await h.app.inject({ method: "GET", url: "/api/kits/v1/voice-models?perPage=100", headers: stranger.auth })
    ).json();
    const ids = all.data.map((m: { id: number }) => m.id);
    assert.ok(ids.includes(publicModel) && ids.includes(strangersModel) && !ids.includes(myModel));
    const mine = (
      await h.app.inject({
        method: "GET",
        url: "/api/kits/v1/voice-models?myModels=true&perPage=1&order=desc",
        headers: stranger.auth,
      })
    ).json();
    assert.deepEqual(
      mine.data.map((m: { id: number }) => m.id),
      [strangersModel],
    );
    assert.deepEqual(mine.meta, {
      currentPage: 1,
      firstPage: 1,
      firstPageUrl: "/api/kits/v1/voice-models?page=1&perPage=1&order=desc&myModels=true",
      lastPage: 1,
      lastPageUrl: "/api/kits/v1/voice-models?page=1&perPage=1&order=desc&myModels=true",
      nextPageUrl: null,
      perPage: 1,
      previousPageUrl: null,
      total: 1,
    });
  });
});

describe("text fields sent as file parts, as real clients send them", () => {
  const url = "/api/kits/v1/voice-conversions";

  /** The body Python `requests` builds for `files={"soundFile": open("take.wav", "rb"), ...}`: no Content-Type on any part. */
  function requestsBody(parts: Array<[name: string, filename: string, content: Buffer]>) {
    const boundary = "3699350bed95d6816f6c651c178295b1";
    const payload = Buffer.concat([
      ...parts.flatMap(([name, filename, content]) => [
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\n\r\n`),
        content,
        Buffer.from("\r\n"),
      ]),
      Buffer.from(`--${boundary}--\r\n`),
    ]);
    return {
      payload,
      headers: { "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": String(payload.length) },
    };
  }

  async function send(files: FilePart[], fields: Record<string, string | number> = {}) {
    const form = multipart(fields, files);
    return h.app.inject({ method: "POST", url, headers: { ...form.headers, ...me.auth }, payload: form.payload });
  }

  test('the exact body of Python requests\' files={soundFile: f, voiceModelId: "3"} creates the conversion (201)', async () => {
    const form = requestsBody([
      ["soundFile", "take.wav", await audio("wav")],
      ["voiceModelId", "voiceModelId", Buffer.from(String(publicModel))],
    ]);
    const res = await h.app.inject({ method: "POST", url, headers: { ...form.headers, ...me.auth }, payload: form.payload });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().voiceModelId, publicModel);
    const row = await h.prisma.voiceConversionJob.findUnique({ where: { id: res.json().id } });
    assert.equal(row?.voiceModelId, publicModel);
  });

  test("curl's -F name=@file.txt (text/plain, trailing newline) works for every text field", async () => {
    const text = (name: string, value: string): FilePart => ({
      name,
      filename: `${name}.txt`,
      content: Buffer.from(`${value}\n`),
      contentType: "text/plain",
    });
    const res = await send([
      { name: "soundFile", filename: "take.wav", content: await audio("wav") },
      text("voiceModelId", String(myModel)),
      text("conversionStrength", "0.25"),
      text("modelVolumeMix", "0.75"),
      text("pitchShift", "-3"),
      text("pre", JSON.stringify({ highPassFilter: { cutoff_frequency_hz: 120 } })),
      text("post", JSON.stringify({ delay: { mix: 0.2 } })),
    ]);
    assert.equal(res.statusCode, 201, res.body);
    const row = await h.prisma.voiceConversionJob.findUnique({ where: { id: res.json().id } });
    assert.equal(row?.voiceModelId, myModel);
    assert.deepEqual(row?.params, {
      conversionStrength: 0.25,
      modelVolumeMix: 0.75,
      pitchShift: -3,
      pre: { highPassFilter: { cutoff_frequency_hz: 120 } },
      post: { delay: { delay_seconds: 0.5, feedback: 0, mix: 0.2 } },
    });
  });

  test("a file part with an unknown name is still read and ignored", async () => {
    const res = await send(
      [
        { name: "soundFile", filename: "take.wav", content: await audio("wav") },
        { name: "coverArt", filename: "cover.png", content: Buffer.alloc(10_000, 7) },
      ],
      { voiceModelId: publicModel },
    );
    assert.equal(res.statusCode, 201, res.body);
  });

  const wrong: Array<[string, () => Promise<Buffer>, RegExp]> = [
    ["an audio file", () => audio("wav"), /voiceModelId must be a text value, got a file larger than 4 KB/],
    ["4 KB + 1 of digits", async () => Buffer.alloc(4097, "1"), /voiceModelId must be a text value, got a file larger than 4 KB/],
    [
      "a small binary file with NUL bytes",
      async () => Buffer.from([0x03, 0x00, 0x00, 0x00]),
      /voiceModelId must be a text value, got a binary file \(contains NUL bytes\)/,
    ],
    [
      "a small file that is not UTF-8",
      async () => Buffer.from([0x33, 0xff, 0xfe, 0x80]),
      /voiceModelId must be a text value, got a binary file \(not UTF-8\)/,
    ],
    [
      "a small text file that is not a number",
      async () => Buffer.from("three"),
      /voiceModelId must be a positive integer \(got "three"\)/,
    ],
  ];
  for (const [name, content, message] of wrong) {
    test(`${name} sent as voiceModelId → 422 naming it, nothing stored`, async () => {
      const before = await footprint(h);
      const res = await send([
        { name: "soundFile", filename: "take.wav", content: await audio("wav") },
        { name: "voiceModelId", filename: "id.bin", content: await content() },
      ]);
      expectError(res, 422, message);
      await assertUnchanged(h, before);
    });
  }

  test("voice model import: metadata as a file part is read (201); a large one is 422 and stores nothing", async () => {
    const owner = await h.newCaller();
    const onnx = await readFile(new URL("../../../models/voices/native-aria.onnx", import.meta.url));
    const importModel = async (metadata: Buffer) => {
      const form = multipart({}, [
        { name: "metadata", filename: "metadata.json", content: metadata, contentType: "application/json" },
        { name: "modelFile", filename: "aria.onnx", content: onnx },
      ]);
      return h.app.inject({
        method: "POST",
        url: "/api/kits/v1/voice-models",
        headers: { ...form.headers, ...owner.auth },
        payload: form.payload,
      });
    };
    const created = await importModel(Buffer.from(JSON.stringify({ title: "Aria from a file", tags: ["file"] })));
    assert.equal(created.statusCode, 201, created.body);
    assert.deepEqual([created.json().title, created.json().tags], ["Aria from a file", ["file"]]);

    const before = await footprint(h);
    const storedModels = (await h.app.ctx.storage.list("voice-models/")).length;
    const huge = JSON.stringify({ title: "Too long", tags: Array.from({ length: 20 }, () => "x".repeat(250)) });
    expectError(await importModel(Buffer.from(huge)), 422, /metadata must be a text value, got a file larger than 4 KB/);
    await assertUnchanged(h, before);
    assert.equal((await h.app.ctx.storage.list("voice-models/")).length, storedModels);
  });

  test("real clients over HTTP: Python requests' files= and curl's -F name=@file; curl sending audio as voiceModelId gets the 422", async (t) => {
    const base = await h.app.listen({ host: "127.0.0.1", port: 0 });
    const dir = await mkdtemp(path.join(os.tmpdir(), "mixdown-clients-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const song = path.join(dir, "take.wav");
    await writeFile(song, await audio("wav"));
    const idFile = path.join(dir, "id.txt");
    await writeFile(idFile, `${publicModel}\n`);

    const curl = await run("curl", [
      "-sS",
      "-H",
      `authorization: Bearer ${me.key}`,
      "-F",
      `soundFile=@${song}`,
      "-F",
      `voiceModelId=@${idFile}`,
      "-w",
      "\n%{http_code}",
      `${base}${url}`,
    ]);
    assert.equal(curl.stdout.trim().split("\n").at(-1), "201", curl.stdout);
    const before = await footprint(h);
    const wrongPart = await run("curl", [
      "-sS",
      "-H",
      `authorization: Bearer ${me.key}`,
      "-F",
      `voiceModelId=@${song}`,
      "-F",
      `soundFile=@${song}`,
      "-w",
      "\n%{http_code}",
      `${base}${url}`,
    ]);
    const [body, status] = wrongPart.stdout.trim().split("\n");
    assert.equal(status, "422", wrongPart.stdout);
    assert.match(JSON.parse(body!).message, /voiceModelId must be a text value, got a file larger than 4 KB/);
    await assertUnchanged(h, before);

    const python = await run("python3", ["-c", "import requests"]).then(
      () => true,
      () => false,
    );
    if (!python) return t.skip("python3 with requests is not installed here");
    const script = `
import sys, requests
with open(sys.argv[1], "rb") as f:
    r = requests.post(sys.argv[2], headers={"Authorization": "Bearer " + sys.argv[3]}, files={"soundFile": f, "voiceModelId": sys.argv[4]})
print(r.status_code)
print(r.json()["voiceModelId"])`;
    const sent = await run("python3", ["-c", script, song, `${base}${url}`, me.key, String(publicModel)]);
    assert.deepEqual(sent.stdout.trim().split("\n"), ["201", String(publicModel)], sent.stdout);
  });
});
