import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { bullJobId } from "@mixdown/queue";
import { assertUnchanged, audio, footprint, multipart, sortedKeys, startHarness, TIMESTAMP, type Harness } from "./helpers.ts";

let h: Harness;
let me: Awaited<ReturnType<Harness["newCaller"]>>;
let myModel: number;
let pendingModel: number;
before(async () => {
  h = await startHarness("s3");
  me = await h.newCaller();
  myModel = (await h.createModel({ title: "My Tenor", ownerId: me.callerId })).id;
  pendingModel = (await h.createModel({ title: "Unfinished", ownerId: me.callerId, state: "pending" })).id;
});
after(async () => {
  await h?.stop();
});

const RECORD_KEYS = [
  "createdAt",
  "errorMessage",
  "id",
  "input",
  "inputFileName",
  "inputFileUrl",
  "jobEndTime",
  "jobStartTime",
  "preset",
  "progress",
  "status",
  "steps",
  "type",
];

async function create(fields: Record<string, string | number>, auth = me.auth, extraHeaders: Record<string, string> = {}) {
  const form = multipart(fields, [{ name: "inputFile", filename: "song.wav", content: await audio("wav") }]);
  return h.app.inject({
    method: "POST",
    url: "/api/kits/v1/pipelines",
    headers: { ...form.headers, ...auth, ...extraHeaders },
    payload: form.payload,
  });
}

const get = (id: number, auth = me.auth) => h.app.inject({ method: "GET", url: `/api/kits/v1/pipelines/${id}`, headers: auth });

describe("pipelines", () => {
  test("GET /pipeline-presets lists each preset with its steps and what it requires", async () => {
    const res = await h.app.inject({ method: "GET", url: "/api/kits/v1/pipeline-presets", headers: me.auth });
    assert.equal(res.statusCode, 200, res.body);
    const presets = res.json().data as Array<{ name: string; steps: Array<{ step: string }>; requires: string[]; input: string }>;
    const cover = presets.find((p) => p.name === "cover");
    assert.deepEqual(
      cover?.steps.map((s) => s.step),
      ["separate", "convert", "recombine"],
    );
    assert.deepEqual(cover?.requires, ["voiceModelId"]);
    const karaoke = presets.find((p) => p.name === "karaoke");
    assert.deepEqual(karaoke?.steps, [{ step: "separate", options: {} }]);
    assert.deepEqual(karaoke?.requires, []);
    assert.equal(presets.find((p) => p.name === "vocal-swap")?.input, "vocal");
    const cleanup = presets.find((p) => p.name === "vocal-cleanup");
    assert.deepEqual(cleanup?.steps, [
      { step: "separate", options: {} },
      { step: "repair", options: { steps: "dereverb,denoise" } },
    ]);
    assert.deepEqual(cleanup?.requires, []);
    const mastered = presets.find((p) => p.name === "cover-mastered");
    assert.deepEqual(
      mastered?.steps.map((s) => s.step),
      ["separate", "convert", "recombine", "master"],
    );
    assert.deepEqual(mastered?.steps[3], { step: "master", options: { targetLufs: -14, truePeakDb: -1 } });
    assert.deepEqual(mastered?.requires, ["voiceModelId"]);
  });

  test("a repair and a master step are checked by their kinds' own forms and stored as those kinds' jobs take them", async () => {
    const steps = [
      { step: "separate" },
      { step: "repair", steps: ["denoise", "dereverb"] },
      { step: "convert", voiceModelId: myModel },
      { step: "recombine" },
      { step: "master", targetLufs: -16 },
    ];
    const res = await create({ steps: JSON.stringify(steps) });
    assert.equal(res.statusCode, 201, res.body);
    const record = res.json();
    assert.deepEqual(
      record.steps.map((s: { step: string; jobKind: string; options: unknown }) => [s.step, s.jobKind, s.options]),
      [
        // no model named: the worker runs the server's setting, as a separation that names none
        ["separate", "vocal-separations", { models: [], ensemble: null }],
        // the repairs in the order they run, as a vocal repair's create orders them
        ["repair", "vocal-repairs", { steps: ["dereverb", "denoise"] }],
        ["convert", "voice-conversions", record.steps[2].options],
        ["recombine", "voice-conversions", {}],
        // truePeakDb not given: the mastering's default
        ["master", "masterings", { targetLufs: -16, truePeakDb: -1 }],
      ],
    );
    // a repair first on a vocal, its steps as the form's comma-separated text
    const vocal = await create({ input: "vocal", steps: JSON.stringify([{ step: "repair", steps: "denoise" }]) });
    assert.equal(vocal.statusCode, 201, vocal.body);
    assert.deepEqual(vocal.json().steps[0].options, { steps: ["denoise"] });
    // a master first on a mix, every option its default
    const master = await create({ steps: JSON.stringify([{ step: "master" }]) });
    assert.equal(master.statusCode, 201, master.body);
    assert.deepEqual(master.json().steps[0].options, { targetLufs: -14, truePeakDb: -1 });
    for (const preset of ["vocal-cleanup", "cover-mastered"]) {
      const made = await create({ preset, ...(preset === "cover-mastered" ? { voiceModelId: myModel } : {}) });
      assert.equal(made.statusCode, 201, made.body);
      assert.equal(made.json().preset, preset);
    }
  });

  test("a create with steps answers 201 with every step pending, stores the upload, writes the rows and queues the pipeline", async () => {
    const steps = [
      { step: "separate" },
      { step: "convert", voiceModelId: myModel, pitchShift: 2, post: { reverb: { wet_level: 0.2 } } },
      { step: "recombine" },
    ];
    const res = await create({ steps: JSON.stringify(steps) });
    assert.equal(res.statusCode, 201, res.body);
    const record = res.json();
    assert.deepEqual(sortedKeys(record), RECORD_KEYS);
    assert.equal(record.type, "pipeline");
    assert.equal(record.status, "running");
    assert.equal(record.preset, null);
    assert.equal(record.input, "mix");
    assert.match(record.inputFileUrl, /^http/);
    assert.match(record.createdAt, TIMESTAMP);
    assert.deepEqual(
      record.steps.map((s: { index: number; step: string; status: string; jobId: null; jobKind: string }) => [
        s.index,
        s.step,
        s.status,
        s.jobId,
        s.jobKind,
      ]),
      [
        [0, "separate", "pending", null, "vocal-separations"],
        [1, "convert", "pending", null, "voice-conversions"],
        [2, "recombine", "pending", null, "voice-conversions"],
      ],
    );
    // the convert's options as the conversion kind stores them: its defaults filled in, its effects checked
    assert.equal(record.steps[1].options.voiceModelId, myModel);
    assert.equal(record.steps[1].options.params.pitchShift, 2);
    assert.equal(typeof record.steps[1].options.params.conversionStrength, "number");

    const row = await h.prisma.pipeline.findUnique({ where: { id: record.id }, include: { steps: true } });
    assert.equal(row?.callerId, me.callerId);
    assert.match(row!.inputKey, /^uploads\/pipeline\/[0-9a-f-]{36}\.wav$/);
    assert.equal(await h.app.ctx.storage.exists(row!.inputKey), true);
    assert.equal(row?.steps.length, 3);
    assert.notEqual(row?.enqueuedAt, null);
    const job = await h.app.ctx.queues.queue("pipeline").getJob(bullJobId("pipeline", record.id));
    assert.deepEqual(job?.data, { jobId: record.id });
    // no step's job exists before the worker starts it
    assert.equal(await h.prisma.separationJob.count({ where: { callerId: me.callerId } }), 0);

    const fetched = await get(record.id);
    assert.equal(fetched.statusCode, 200);
    assert.deepEqual(fetched.json(), record);
    // the upload, signed: what the dashboard plays as "before"
    const download = await fetch(record.inputFileUrl);
    assert.equal(download.status, 200);
    const stored = Buffer.concat(await (await h.app.ctx.storage.getStream(row!.inputKey)).toArray());
    assert.deepEqual(Buffer.from(await download.arrayBuffer()), stored);
  });

  test("a preset with its voiceModelId makes the preset's steps; the record names the preset", async () => {
    const res = await create({ preset: "cover", voiceModelId: myModel });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().preset, "cover");
    assert.deepEqual(
      res.json().steps.map((s: { step: string }) => s.step),
      ["separate", "convert", "recombine"],
    );
    assert.equal(res.json().steps[1].options.voiceModelId, myModel);
    const karaoke = await create({ preset: "karaoke" });
    assert.equal(karaoke.statusCode, 201, karaoke.body);
    const swap = await create({ preset: "vocal-swap", voiceModelId: myModel });
    assert.equal(swap.statusCode, 201, swap.body);
    assert.equal(swap.json().input, "vocal");
  });

  const refusals: Array<[string, Record<string, string | number>, RegExp]> = [
    [
      "an unknown step",
      { steps: JSON.stringify([{ step: "separate" }, { step: "karaoke" }]) },
      /^steps\[1\]: step "karaoke" is not a step \(one of separate, repair, convert, recombine, master\)/,
    ],
    [
      "a convert of a mix",
      { steps: JSON.stringify([{ step: "convert", voiceModelId: 1 }]) },
      /^steps\[0\]: convert takes a vocal, but the input \(input=mix\) gives a mix/,
    ],
    [
      "a recombine without a separation",
      { input: "vocal", steps: JSON.stringify([{ step: "convert", voiceModelId: 1 }, { step: "recombine" }]) },
      /^steps\[1\]: recombine must follow a convert that follows a separate/,
    ],
    [
      "an unknown preset",
      { preset: "nightcore" },
      /^preset "nightcore" is not a preset \(one of karaoke, cover, vocal-swap, vocal-cleanup, cover-mastered\)/,
    ],
    [
      "a preset that masters a cover without its voice model",
      { preset: "cover-mastered" },
      /^voiceModelId is required by preset cover-mastered/,
    ],
    [
      "a repair of a mix",
      { steps: JSON.stringify([{ step: "repair", steps: "denoise" }]) },
      /^steps\[0\]: repair takes a vocal, but the input \(input=mix\) gives a mix; put a separate before it/,
    ],
    [
      "a master of a vocal",
      { steps: JSON.stringify([{ step: "separate" }, { step: "master" }]) },
      /^steps\[1\]: master takes a mix, but steps\[0\] \(separate\) gives a vocal/,
    ],
    [
      "a repair without its steps",
      { steps: JSON.stringify([{ step: "separate" }, { step: "repair" }]) },
      /^steps\[1\] \(repair\): steps is required: one or more of dereverb, denoise/,
    ],
    [
      "a repair naming no repair step",
      { steps: JSON.stringify([{ step: "separate" }, { step: "repair", steps: "denoise,declip" }]) },
      /^steps\[1\] \(repair\): steps names "declip", not a repair step/,
    ],
    [
      "a repair that isolates the vocal itself",
      { steps: JSON.stringify([{ step: "separate" }, { step: "repair", steps: "denoise", isolateVocal: true }]) },
      /^steps\[1\] \(repair\): isolateVocal is not taken by a pipeline's repair: .*put a separate before it/,
    ],
    [
      "a master's loudness out of the mastering's range",
      { steps: JSON.stringify([{ step: "master", targetLufs: -3 }]) },
      /^steps\[0\] \(master\): targetLufs must be between -70 and -5 \(got -3\)/,
    ],
    [
      "a master to a reference",
      { steps: JSON.stringify([{ step: "master", referenceFile: "ref.wav" }]) },
      /^steps\[0\] \(master\): referenceFile is not taken by a pipeline's master: .*loudness target only/,
    ],
    [
      "a separate that keeps only some stems",
      {
        steps: JSON.stringify([
          { step: "separate", stems: "vocals" },
          { step: "convert", voiceModelId: 1 },
          { step: "recombine" },
        ]),
      },
      /^steps\[0\] \(separate\): stems is not taken by a pipeline's separate: the steps after a separate take its whole vocal and backing/,
    ],
    [
      "a separate with output options",
      { steps: JSON.stringify([{ step: "separate", outputFormat: "flac", sampleRate: 48000 }]) },
      /^steps\[0\] \(separate\): outputFormat, sampleRate are not taken by a pipeline's separate/,
    ],
    ["a preset without the voice model it needs", { preset: "cover" }, /^voiceModelId is required by preset cover/],
    ["both steps and a preset", { preset: "karaoke", steps: "[]" }, /^give either steps or preset, not both/],
    ["neither steps nor a preset", {}, /^steps or preset is required/],
    ["steps that are not JSON", { steps: "separate,convert" }, /^steps must be a JSON array of steps/],
    ["no steps", { steps: "[]" }, /^steps: at least one step is required/],
    [
      "a step's option out of its kind's range",
      { steps: JSON.stringify([{ step: "separate" }, { step: "convert", voiceModelId: 1, pitchShift: 99 }]) },
      /^steps\[1\] \(convert\): pitchShift must be between -24 and 24 \(got 99\)/,
    ],
    [
      "a step's option the kind does not take",
      { steps: JSON.stringify([{ step: "separate", voiceModelId: 1 }]) },
      /^steps\[0\] \(separate\): unknown option voiceModelId \(separate takes model, ensemble\)/,
    ],
    [
      "a convert without its voice model",
      { steps: JSON.stringify([{ step: "separate" }, { step: "convert" }]) },
      /^steps\[1\] \(convert\): voiceModelId is required/,
    ],
    [
      "an uninstalled separation model",
      { steps: JSON.stringify([{ step: "separate", model: "no_such_model" }]) },
      /^steps\[0\] \(separate\): .*no_such_model/,
    ],
    [
      "a convert's bad effect chain",
      { steps: JSON.stringify([{ step: "separate" }, { step: "convert", voiceModelId: 1, pre: { wobble: {} } }]) },
      /^steps\[1\] \(convert\): pre/,
    ],
  ];
  for (const [what, fields, message] of refusals)
    test(`refuses ${what} with 422 naming it, leaving nothing behind`, async () => {
      const before = await footprint(h);
      const res = await create(fields);
      assert.equal(res.statusCode, 422, res.body);
      assert.match(res.json().message, message);
      await assertUnchanged(h, before);
    });

  test("refuses a voice model that is not usable, naming the step, leaving nothing behind", async () => {
    const before = await footprint(h);
    for (const id of [pendingModel, 999_999]) {
      const res = await create({ input: "vocal", steps: JSON.stringify([{ step: "convert", voiceModelId: id }]) });
      assert.equal(res.statusCode, 422, res.body);
      assert.match(res.json().message, new RegExp(`^steps\\[0\\] \\(convert\\): voiceModelId: voice model ${id} `));
    }
    await assertUnchanged(h, before);
  });

  test("list pages the caller's own pipelines; another caller gets 404", async () => {
    const a = await h.newCaller();
    const b = await h.newCaller();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await create({ preset: "karaoke" }, a.auth)).json().id);
    const page = await h.app.inject({ method: "GET", url: "/api/kits/v1/pipelines?perPage=2&page=2", headers: a.auth });
    assert.equal(page.statusCode, 200, page.body);
    assert.equal(page.json().meta.total, 3);
    assert.deepEqual(
      page.json().data.map((r: { id: number }) => r.id),
      [ids[2]],
    );
    assert.equal(page.json().data[0].steps.length, 1);
    const other = await get(ids[0], b.auth);
    assert.equal(other.statusCode, 404);
    assert.match(other.json().message, /pipeline \d+ not found/);
  });

  test("an Idempotency-Key replays the pipeline it made", async () => {
    const key = { "idempotency-key": `pipe-${Date.now()}` };
    const first = await create({ preset: "karaoke" }, me.auth, key);
    assert.equal(first.statusCode, 201, first.body);
    const replay = await create({ preset: "karaoke" }, me.auth, key);
    assert.equal(replay.statusCode, 201, replay.body);
    assert.equal(replay.headers["idempotent-replayed"], "true");
    assert.equal(replay.json().id, first.json().id);
    assert.equal(await h.prisma.pipeline.count({ where: { id: first.json().id } }), 1);
  });

  test("a cancel ends the pipeline and its running step's job `cancelled`; a delete removes it, its steps' jobs and their files", async () => {
    const caller = await h.newCaller();
    const { id } = (await create({ preset: "karaoke" }, caller.auth)).json();
    // the step's job as the worker starts it: a separation row recorded on the step
    const pipeline = await h.prisma.pipeline.findUniqueOrThrow({ where: { id } });
    const stepInput = `uploads/separation/pipeline-${id}-step-0-input.wav`;
    await h.app.ctx.storage.putStream(stepInput, (await import("node:stream")).Readable.from([await audio("wav")]));
    const stepJob = await h.prisma.separationJob.create({
      data: { callerId: caller.callerId, kind: "vocal_separation", inputKey: stepInput, inputFormat: "wav", status: "running" },
    });
    await h.prisma.pipelineStep.update({
      where: { pipelineId_index: { pipelineId: id, index: 0 } },
      data: { jobId: stepJob.id },
    });
    const running = (await get(id, caller.auth)).json();
    assert.equal(running.steps[0].status, "running");
    assert.equal(running.steps[0].jobId, stepJob.id);

    const cancelled = await h.app.inject({ method: "POST", url: `/api/kits/v1/pipelines/${id}/cancel`, headers: caller.auth });
    assert.equal(cancelled.statusCode, 200, cancelled.body);
    assert.equal(cancelled.json().status, "cancelled");
    assert.equal(cancelled.json().steps[0].status, "cancelled");
    assert.equal((await h.prisma.separationJob.findUniqueOrThrow({ where: { id: stepJob.id } })).status, "cancelled");
    const again = await h.app.inject({ method: "POST", url: `/api/kits/v1/pipelines/${id}/cancel`, headers: caller.auth });
    assert.equal(again.statusCode, 409);

    const deleted = await h.app.inject({ method: "DELETE", url: `/api/kits/v1/pipelines/${id}`, headers: caller.auth });
    assert.equal(deleted.statusCode, 204, deleted.body);
    assert.equal(await h.prisma.pipeline.count({ where: { id } }), 0);
    assert.equal(await h.prisma.pipelineStep.count({ where: { pipelineId: id } }), 0);
    assert.equal(await h.prisma.separationJob.count({ where: { id: stepJob.id } }), 0);
    assert.equal(await h.app.ctx.storage.exists(pipeline.inputKey), false);
    assert.equal(await h.app.ctx.storage.exists(stepInput), false);
    assert.equal((await get(id, caller.auth)).statusCode, 404);
  });
});
