import assert from "node:assert/strict";
import { test } from "node:test";
import {
  bullJobId,
  bullJobName,
  concurrencyOf,
  concurrencySettings,
  JOB_CATALOGUE,
  JOB_KINDS,
  JOB_TABLE_KINDS,
  JobFailure,
  RECORD_KINDS,
  rowIdOf,
  SEPARATION_KINDS,
  separationKindOf,
} from "../src/index.ts";

test("every separation kind's database and API spellings translate back to the payload kind", () => {
  for (const [kind, entry] of Object.entries(SEPARATION_KINDS)) assert.equal(separationKindOf(entry.dbKind), kind);
  assert.equal(SEPARATION_KINDS["vocal-separation"].apiPath, "vocal-separations");
  assert.equal(SEPARATION_KINDS["stem-split"].dbKind, "stem_split");
});

test("a queue entry's id, name and row come from its kind's entry", () => {
  assert.equal(rowIdOf({ queue: "separation", payload: { kind: "stem-split", jobId: 4 } }), 4);
  assert.equal(rowIdOf({ queue: "voice-model-build", payload: { voiceModelId: 9 } }), 9);
  assert.equal(bullJobName({ queue: "separation", payload: { kind: "stem-split", jobId: 4 } }), "stem-split");
  assert.equal(bullJobName({ queue: "voice-blend", payload: { jobId: 4 } }), "voice-blend");
  assert.equal(bullJobId("voice-model-build", 9), "voice-model-build-9");
});

test("concurrency is read from the kind's setting, or fixed for the kinds without one", () => {
  const names = concurrencySettings().map((s) => s.setting);
  assert.deepEqual(names, [
    "WORKER_CONCURRENCY_SEPARATION",
    "WORKER_CONCURRENCY_VOICE_CONVERSION",
    "WORKER_CONCURRENCY_VOICE_BLEND",
    "WORKER_CONCURRENCY_TTS",
    "WORKER_CONCURRENCY_AUDIO_ANALYSIS",
    "WORKER_CONCURRENCY_VOCAL_REPAIR",
    "WORKER_CONCURRENCY_MASTERING",
    "WORKER_CONCURRENCY_HARMONY",
    "WORKER_CONCURRENCY_PIPELINE",
    "WORKER_CONCURRENCY_WEBHOOK_DELIVERY",
  ]);
  const settings = {
    WORKER_CONCURRENCY_SEPARATION: 3,
    WORKER_CONCURRENCY_VOICE_CONVERSION: 2,
    WORKER_CONCURRENCY_VOICE_BLEND: 5,
    WORKER_CONCURRENCY_TTS: 2,
    WORKER_CONCURRENCY_AUDIO_ANALYSIS: 6,
    WORKER_CONCURRENCY_VOCAL_REPAIR: 7,
    WORKER_CONCURRENCY_MASTERING: 8,
    WORKER_CONCURRENCY_HARMONY: 10,
    WORKER_CONCURRENCY_PIPELINE: 9,
    WORKER_CONCURRENCY_WEBHOOK_DELIVERY: 4,
  };
  assert.deepEqual(
    JOB_KINDS.map((k) => concurrencyOf(k, settings)),
    [3, 2, 5, 2, 6, 7, 8, 10, 9, 1, 1, 4, 1],
  );
});

test("a job failure keeps its kind across a structured clone (the thread boundary)", () => {
  const sent = structuredClone(new JobFailure("bad-input", "cannot decode").serialise());
  const received = JobFailure.from(sent);
  assert.equal(received.kind, "bad-input");
  assert.equal(received.message, "cannot decode");
  assert.equal(received.retryable, false);
  assert.equal(new JobFailure("transient", "s3 down").retryable, true);
});

test("the job table kinds and their record spellings are derived from the catalogue's `rows`", () => {
  // Spelled out rather than filtered from the catalogue, so a kind whose `rows` changes, or a new
  // kind that is in neither list, fails here.
  const jobTableKinds = [
    "separation",
    "voice-conversion",
    "voice-blend",
    "tts",
    "audio-analysis",
    "vocal-repair",
    "mastering",
    "harmony",
    "pipeline",
  ] as const;
  const otherKinds = {
    "voice-model-media": "voice-model",
    "voice-model-build": "voice-model",
    "webhook-delivery": "webhook-outbox",
    "model-install": "model-install",
  } as const;
  assert.deepEqual(JOB_TABLE_KINDS, jobTableKinds);
  assert.deepEqual(RECORD_KINDS, [
    "vocal_separation",
    "stem_split",
    "voice_conversion",
    "voice_blend",
    "tts",
    "audio_analysis",
    "vocal_repair",
    "mastering",
    "harmony",
    "pipeline",
  ]);
  for (const kind of jobTableKinds) assert.equal(JOB_CATALOGUE[kind].rows, "job-table", kind);
  for (const [kind, rows] of Object.entries(otherKinds)) {
    assert.equal(JOB_CATALOGUE[kind as keyof typeof otherKinds].rows, rows, kind);
    assert.ok(!(JOB_TABLE_KINDS as readonly string[]).includes(kind), `${kind} is not a job table kind`);
  }
  assert.deepEqual([...JOB_KINDS].sort(), [...jobTableKinds, ...Object.keys(otherKinds)].sort());
});
