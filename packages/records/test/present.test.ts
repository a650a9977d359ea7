import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { SeparationJob, TtsJob, VoiceBlendJob, VoiceConversionJob, VoiceModel } from "@mixdown/db";
import { fileUrlPath, LocalDiskStorage, SignedUrlCache, verifyFileSignature } from "@mixdown/storage";
import { VoiceAssets } from "@mixdown/voice/assets";
import type { TObject } from "typebox";
import { Value } from "typebox/value";
import {
  API_PREFIX,
  formatTimestamp,
  RecordPresenter,
  AudioAnalysisResult,
  SeparationAnalysis,
  BatchRecord,
  SeparationJobRecord,
  sharedRecordSchemas,
  TtsJobRecord,
  VoiceBlendJobRecord,
  VoiceConversionJobRecord,
  VoiceModelRecord,
} from "../src/index.ts";

const BASE_URL = "http://mixdown.test";
const SECRET = "records-test-signing-secret";
const TTL_SECONDS = 600;
const API_BASE = `${BASE_URL}${API_PREFIX}`;
const CREATED = new Date("2026-11-22T09:41:07.123Z");
const STARTED = new Date("2026-11-22T09:41:08.5Z");
const ENDED = new Date("2026-11-22T09:42:00Z");

let modelsDir: string;
let storage: LocalDiskStorage;
let presenter: RecordPresenter;

before(async () => {
  modelsDir = await mkdtemp(join(tmpdir(), "mixdown-records-"));
  storage = new LocalDiskStorage({ rootDir: join(modelsDir, "storage"), publicBaseUrl: BASE_URL, signingSecret: SECRET });
  // The check the API and the worker pass, over an empty MODELS_DIR: an RVC model lacks ContentVec and RMVPE.
  const assets = new VoiceAssets({
    modelsDir,
    contentVec: "contentvec.onnx",
    contentVecV1: "contentvec-v1.onnx",
    rmvpe: "rmvpe.onnx",
    pitchMethod: "auto",
  });
  presenter = new RecordPresenter(storage, {
    ttlSeconds: TTL_SECONDS,
    apiBaseUrl: API_BASE,
    missingAssets: (row) => assets.missingFor(row),
  });
});

after(() => rm(modelsDir, { recursive: true, force: true }));

/** The name the OpenAPI document gives a schema (TypeBox keeps `$id` but does not type it). */
const idOf = (schema: TObject) => (schema as { $id?: string }).$id;

/** Asserts that `record` is what its schema documents: valid, and no field the schema does not name. */
function assertDocumented(schema: TObject, record: unknown): void {
  // The job records refer to the voice model's schema by its $id, as the OpenAPI document does.
  const context = { VoiceModel: VoiceModelRecord, AudioAnalysis: AudioAnalysisResult, SeparationAnalysis };
  const errors = [...Value.Errors(context, schema, record)].map((e) => `${e.instancePath} ${e.message}`);
  assert.deepEqual(errors, [], `${idOf(schema)} record does not validate`);
  const undocumented = Object.keys(record as object).filter((k) => !(k in schema.properties));
  assert.deepEqual(undocumented, [], `${idOf(schema)} record has fields its schema does not name`);
}

/** Asserts that `url` is a local-disk download URL of `key`, signed with the storage's secret, valid for the TTL from now. */
function assertSignedUrlOf(url: string | null, key: string, ttlSeconds = TTL_SECONDS): void {
  assert.ok(url, `no URL for ${key}`);
  const parsed = new URL(url);
  assert.equal(`${parsed.origin}${parsed.pathname}`, `${BASE_URL}${fileUrlPath(key)}`);
  const expires = parsed.searchParams.get("expires");
  assert.equal(verifyFileSignature(SECRET, key, expires, parsed.searchParams.get("signature")), "ok");
  const now = Math.floor(Date.now() / 1000);
  assert.ok(Number(expires) >= now + ttlSeconds - 1, `expires ${expires} is less than ${ttlSeconds} s away`);
  assert.ok(Number(expires) <= now + ttlSeconds + SignedUrlCache.sliceSeconds(ttlSeconds) + 1, `expires ${expires} is too far`);
}

function voiceModelRow(fields: Partial<VoiceModel> = {}): VoiceModel {
  return {
    id: 3,
    ownerId: null,
    title: "Ava",
    tags: ["pop", "female"],
    imageUrl: null,
    demoUrl: null,
    twitterLink: null,
    instagramLink: "https://instagram.example/ava",
    tiktokLink: null,
    spotifyLink: null,
    youtubeLink: null,
    architecture: "native",
    sampleRate: 48_000,
    fileKey: "models:voices/ava.onnx",
    metadata: {},
    slug: "ava",
    state: "ready",
    createdAt: CREATED,
    demoKey: "voice-models/3/demo.mp3",
    imageKey: null,
    mediaEnqueuedAt: null,
    mediaError: null,
    referenceKey: null,
    buildEnqueuedAt: null,
    buildError: null,
    sourceUrl: null,
    instrument: false,
    ...fields,
  };
}

/** The columns every job table has, as a finished job's row holds them. */
const FINISHED_JOB = {
  callerId: 7,
  status: "success",
  progress: 100,
  errorMessage: null,
  enqueuedAt: CREATED,
  createdAt: CREATED,
  jobStartTime: STARTED,
  jobEndTime: ENDED,
  webhookUrl: null,
  apiKeyId: null,
  inputsExpiredAt: null,
  outputsExpiredAt: null,
} as const;

function separationRow(fields: Partial<SeparationJob> = {}): SeparationJob {
  return {
    ...FINISHED_JOB,
    id: 41,
    kind: "vocal_separation",
    inputKey: "uploads/vocal-separation/0b6a4e3e-5a55-4c53-9d0e-3f1f0b8c9a10.mp3",
    inputFormat: "mp3",
    inputFileName: "song.mp3",
    inputUrl: null,
    vocalKey: "outputs/vocal-separation/41/vocals.wav",
    lossyVocalKey: "outputs/vocal-separation/41/vocals.mp3",
    backingKey: null,
    stems: [
      { instrument: "vocals", key: "outputs/vocal-separation/41/lead.wav" },
      { instrument: "harmony", key: "outputs/vocal-separation/41/harmony.wav" },
    ],
    lossyStems: [],
    models: ["vocals"],
    ensemble: null,
    audioSeconds: 184.2,
    analyze: false,
    analysis: null,
    batchId: null,
    outputOptions: null,
    output: null,
    ...fields,
  };
}

function conversionRow(fields: Partial<VoiceConversionJob> = {}): VoiceConversionJob & { voiceModel: VoiceModel } {
  return {
    ...FINISHED_JOB,
    id: 12,
    voiceModelId: 3,
    inputKey: "uploads/voice-conversion/5d1c2f4e-8f0a-4f51-a2c6-0f0e5b6a7c81.wav",
    inputFormat: "wav",
    backingKey: null,
    params: {},
    outputKey: "outputs/voice-conversion/12/output.wav",
    lossyOutputKey: "outputs/voice-conversion/12/output.mp3",
    recombinedKey: null,
    audioSeconds: 9.5,
    ...fields,
    voiceModel: voiceModelRow(),
  };
}

function ttsRow(fields: Partial<TtsJob> = {}): TtsJob & { voiceModel: VoiceModel } {
  return {
    ...FINISHED_JOB,
    id: 5,
    voiceModelId: 3,
    status: "running",
    progress: 40,
    inputText: "Hello there.",
    language: null,
    audioSeconds: 1,
    synthesizer: null,
    outputKey: null,
    lossyOutputKey: null,
    jobEndTime: null,
    ...fields,
    voiceModel: voiceModelRow(),
  };
}

function blendRow(fields: Partial<VoiceBlendJob> = {}): VoiceBlendJob {
  return {
    ...FINISHED_JOB,
    id: 9,
    model1Id: 3,
    model2Id: 4,
    model3Id: null,
    model4Id: null,
    alpha: 0.5,
    alpha2: 0.5,
    alpha3: null,
    alpha4: null,
    title: "Ava and Bo",
    outputModelId: 20,
    ...fields,
  };
}

test("a finished separation's record validates, with each stored key's URL signed and null where the row has no key", async () => {
  const record = await presenter.separationJob(separationRow());
  assertDocumented(SeparationJobRecord, record);
  assertSignedUrlOf(record.vocalAudioFileUrl, "outputs/vocal-separation/41/vocals.wav");
  assertSignedUrlOf(record.lossyVocalAudioFileUrl, "outputs/vocal-separation/41/vocals.mp3");
  assert.equal(record.backingAudioFileUrl, null);
  assert.deepEqual(
    record.stemFileUrls.map((s) => s.instrument),
    ["vocals", "harmony"],
  );
  assertSignedUrlOf(record.stemFileUrls[1]!.url, "outputs/vocal-separation/41/harmony.wav");
  assert.deepEqual(record.lossyStemFileUrls, []);
  assert.equal(record.type, "separate");
  assert.equal(record.createdAt, "2026-11-22 09:41:07.123000 +00:00");
  assert.equal(record.jobEndTime, "2026-11-22 09:42:00.000000 +00:00");
});

test("a batch's record sums its jobs up: counts by status, the mean progress, its end and zip only once every job has ended", () => {
  const batch = (jobs: SeparationJob[]) => ({
    id: 5,
    callerId: 7,
    apiKeyId: null,
    kind: "stem_split" as const,
    rejected: [{ fileName: "notes.txt", reason: "inputFile is not audio" }],
    createdAt: CREATED,
    jobs,
  });
  const later = new Date(ENDED.getTime() + 60_000);
  const running = presenter.batch(
    batch([
      separationRow({ id: 1, batchId: 5 }),
      separationRow({ id: 2, batchId: 5, status: "running", progress: 40, jobEndTime: null }),
    ]),
  );
  assertDocumented(BatchRecord, running);
  assert.equal(running.kind, "stem-split");
  assert.equal(running.status, "running");
  assert.equal(running.progress, 70);
  assert.deepEqual(running.counts, { running: 1, success: 1, error: 0, cancelled: 0 });
  assert.equal(running.jobEndTime, null);
  assert.equal(running.zipUrl, null);
  assert.deepEqual(running.rejected, [{ fileName: "notes.txt", reason: "inputFile is not audio" }]);

  const ended = presenter.batch(
    batch([
      separationRow({ id: 1, batchId: 5 }),
      separationRow({ id: 2, batchId: 5, status: "error", errorMessage: "no audio", jobEndTime: later }),
    ]),
  );
  assert.equal(ended.status, "error");
  assert.equal(ended.progress, 100);
  assert.equal(ended.jobEndTime, "2026-11-22 09:43:00.000000 +00:00");
  assert.equal(ended.zipUrl, `${API_BASE}/batches/5/zip`);
  assert.deepEqual(
    ended.jobs.map((j) => [j.id, j.status, j.errorMessage]),
    [
      [1, "success", null],
      [2, "error", "no audio"],
    ],
  );
  const cancelled = presenter.batch(batch([separationRow({ id: 1, batchId: 5, status: "cancelled" })]));
  assert.equal(cancelled.status, "cancelled");
  assert.equal(cancelled.zipUrl, null, "no zip without an output");
});

test("a separation has `analysis` only when created with analyze=true: null until it succeeded, then the input's and each stem's", async () => {
  assert.equal("analysis" in (await presenter.separationJob(separationRow())), false, "a Kits client's record is unchanged");
  const waiting = await presenter.separationJob(separationRow({ analyze: true, analysis: null, status: "running" }));
  assert.equal(waiting.analysis, null);
  const one = {
    durationSeconds: 184.2,
    key: { key: "Eb", scale: "major", confidence: 0.8 },
    tempo: { bpm: 92, confidence: 3.7, beats: [0.4, 1.05] },
    loudness: { integratedLufs: -11.2, loudnessRangeLu: 6.1, truePeakDbtp: -0.4 },
  };
  const analysis = { input: one, stems: [{ instrument: "vocals", analysis: { ...one, tempo: null } }] };
  const done = await presenter.separationJob(separationRow({ analyze: true, analysis }));
  assertDocumented(SeparationJobRecord, done);
  assert.deepEqual(done.analysis, analysis);
});

test("a separation has `output` only when created with an output option: null until it succeeded, then what was written", async () => {
  assert.equal("output" in (await presenter.separationJob(separationRow())), false, "a Kits client's record is unchanged");
  const outputOptions = { format: "flac", sampleFormat: "s16", compressionLevel: 8, sampleRate: null, stems: ["vocals"] };
  const waiting = await presenter.separationJob(separationRow({ outputOptions, output: null, status: "running" }));
  assert.equal(waiting.output, null);
  const output = { format: "flac", sampleFormat: "s16", compressionLevel: 8, sampleRate: 44100, stems: ["vocals"] };
  const done = await presenter.separationJob(separationRow({ outputOptions, output }));
  assertDocumented(SeparationJobRecord, done);
  assert.deepEqual(done.output, output);
});

test("a separation made from a batch's link says which as `inputUrl`; one made from an upload has no such key", async () => {
  assert.equal("inputUrl" in (await presenter.separationJob(separationRow())), false, "a Kits client's record is unchanged");
  const link = "https://media.example.com/songs/take.mp3";
  const linked = await presenter.separationJob(separationRow({ inputUrl: link, batchId: 5 }));
  assertDocumented(SeparationJobRecord, linked);
  assert.equal(linked.inputUrl, link);
});

test("a separation's stored model list is the record's `model` as Kits clients read it: comma-joined, null for the setting's", async () => {
  const record = (models: string[]) =>
    presenter.separationJob(separationRow({ models, ensemble: models.length > 1 ? "avg_wave" : null }));
  assert.equal((await record(["vocals"])).model, "vocals");
  assert.equal((await record(["vocals", "stems"])).model, "vocals,stems");
  assert.equal((await record([])).model, null);
});

test("a running separation's record has no URLs and no end time, and a stem entry without a key is left out", async () => {
  const record = await presenter.separationJob(
    separationRow({
      status: "running",
      progress: 10,
      vocalKey: null,
      lossyVocalKey: null,
      jobEndTime: null,
      stems: [{ instrument: "drums" }, "bass", null],
    }),
  );
  assertDocumented(SeparationJobRecord, record);
  assert.deepEqual(
    [record.vocalAudioFileUrl, record.lossyVocalAudioFileUrl, record.backingAudioFileUrl, record.jobEndTime],
    [null, null, null, null],
  );
  assert.deepEqual(record.stemFileUrls, []);
});

test("every job status reaches the record as the row has it, and the schema refuses one it does not name", async () => {
  for (const status of ["running", "success", "error", "cancelled"] as const) {
    const record = await presenter.separationJob(
      separationRow({ status, errorMessage: status === "error" ? "cannot decode" : null }),
    );
    assert.equal(record.status, status);
    assertDocumented(SeparationJobRecord, record);
  }
  const failed = await presenter.separationJob(separationRow({ status: "error", errorMessage: "cannot decode" }));
  assert.equal(failed.errorMessage, "cannot decode");
  assert.equal(Value.Check(SeparationJobRecord, { ...failed, status: "queued" }), false);
});

test("URLs are signed when a row is presented, for the presenter's TTL, never read from the row", async () => {
  const row = separationRow();
  const longer = new RecordPresenter(storage, { ttlSeconds: 7_200, apiBaseUrl: API_BASE });
  assertSignedUrlOf((await presenter.separationJob(row)).vocalAudioFileUrl, row.vocalKey!);
  assertSignedUrlOf((await longer.separationJob(row)).vocalAudioFileUrl, row.vocalKey!, 7_200);
});

test("a catalogue voice model's record: owner links kept, stored media signed, the media route until rendered, nothing missing", async () => {
  const record = await presenter.voiceModel(voiceModelRow({ imageUrl: "https://images.example/ava.png" }));
  assertDocumented(VoiceModelRecord, record);
  assert.equal(record.imageUrl, "https://images.example/ava.png");
  assertSignedUrlOf(record.demoUrl, "voice-models/3/demo.mp3");
  assert.deepEqual([record.public, record.usable, record.isUsable, record.errorMessage], [true, true, true, null]);
  assert.deepEqual(record.missingAssets, []);

  const unrendered = await presenter.voiceModel(voiceModelRow({ demoKey: null }));
  assert.equal(unrendered.imageUrl, `${API_BASE}/voice-models/3/image`);
  assert.equal(unrendered.demoUrl, `${API_BASE}/voice-models/3/demo`);
});

test("a failed RVC model's record names its build error and the files this server lacks for it", async () => {
  const row = voiceModelRow({
    id: 8,
    ownerId: 7,
    architecture: "rvc",
    state: "failed",
    buildError: "not a model",
    demoKey: null,
  });
  const record = await presenter.voiceModel(row);
  assertDocumented(VoiceModelRecord, record);
  assert.deepEqual([record.public, record.usable, record.state, record.errorMessage], [false, false, "failed", "not a model"]);
  assert.deepEqual(
    record.missingAssets.map((m) => [m.asset, m.required]),
    [
      ["contentvec", true],
      ["rmvpe", false],
    ],
  );
  // A build error is only the reason of a failed model: a pending one being built again shows none.
  assert.equal((await presenter.voiceModel({ ...row, state: "pending" })).errorMessage, null);
});

test("a voice conversion's record validates with its voice model's record inside", async () => {
  const record = await presenter.voiceConversionJob(conversionRow());
  assertDocumented(VoiceConversionJobRecord, record);
  assertDocumented(VoiceModelRecord, record.model);
  assertSignedUrlOf(record.outputFileUrl, "outputs/voice-conversion/12/output.wav");
  assertSignedUrlOf(record.lossyOutputFileUrl, "outputs/voice-conversion/12/output.mp3");
  assert.equal(record.recombinedAudioFileUrl, null);
  assert.deepEqual([record.type, record.voiceModelId, record.model.id], ["infer", 3, 3]);
});

test("a TTS job's record validates, with the text as sent and no URLs while it runs", async () => {
  const running = await presenter.ttsJob(ttsRow());
  assertDocumented(TtsJobRecord, running);
  assert.deepEqual(
    [running.type, running.inputTtsText, running.outputFileUrl, running.jobEndTime],
    ["tts", "Hello there.", null, null],
  );

  const done = await presenter.ttsJob(
    ttsRow({
      status: "success",
      progress: 100,
      synthesizer: "espeak-ng",
      language: "en",
      outputKey: "outputs/tts/5/output.wav",
      jobEndTime: ENDED,
    }),
  );
  assertDocumented(TtsJobRecord, done);
  assertSignedUrlOf(done.outputFileUrl, "outputs/tts/5/output.wav");
  assert.deepEqual([done.synthesizer, done.language], ["espeak-ng", "en"]);
});

test("a blend's record names a third and fourth model and weight only when the row has them", async () => {
  const two = presenter.voiceBlendJob(blendRow());
  assertDocumented(VoiceBlendJobRecord, two);
  assert.deepEqual(
    ["model3Id", "model4Id", "alpha3", "alpha4"].filter((k) => k in two),
    [],
  );

  const four = presenter.voiceBlendJob(blendRow({ model3Id: 5, model4Id: 6, alpha: 0.4, alpha2: 0.3, alpha3: 0.2, alpha4: 0.1 }));
  assertDocumented(VoiceBlendJobRecord, four);
  assert.deepEqual([four.model3Id, four.model4Id, four.alpha3, four.alpha4], [5, 6, 0.2, 0.1]);
});

test("present() gives each record type's own record (what a webhook sends)", async () => {
  // Two presentations may fall in two slices of the signed URL cache: their signatures are
  // compared by the other tests, their records here.
  const unsigned = (record: unknown) => JSON.parse(JSON.stringify(record).replace(/expires=\d+&signature=[0-9a-f]+/g, "signed"));
  const same = async (viaPresent: Promise<unknown>, direct: unknown) =>
    assert.deepEqual(unsigned(await viaPresent), unsigned(await direct));
  await same(presenter.present("separationJob", separationRow()), presenter.separationJob(separationRow()));
  await same(presenter.present("voiceConversionJob", conversionRow()), presenter.voiceConversionJob(conversionRow()));
  await same(presenter.present("ttsJob", ttsRow()), presenter.ttsJob(ttsRow()));
  await same(presenter.present("voiceBlendJob", blendRow()), presenter.voiceBlendJob(blendRow()));
  await same(presenter.present("voiceModel", voiceModelRow()), presenter.voiceModel(voiceModelRow()));
});

test("the shared schemas come in the OpenAPI document's order, the voice model first since the job records refer to it", () => {
  assert.deepEqual(sharedRecordSchemas.map(idOf), [
    "VoiceModel",
    "AudioAnalysis",
    "SeparationAnalysis",
    "SeparationJob",
    "VoiceConversionJob",
    "VoiceBlendJob",
    "TtsJob",
    "AudioAnalysisJob",
    "VocalRepairJob",
    "MasteringJob",
    "HarmonyJob",
    "Batch",
    "PipelineStep",
    "Pipeline",
  ]);
});

test("timestamps are written in the interface's format, in UTC with microseconds", () => {
  assert.equal(formatTimestamp(new Date("2026-01-02T03:04:05.006Z")), "2026-01-02 03:04:05.006000 +00:00");
  assert.equal(formatTimestamp(null), null);
});
