import assert from "node:assert/strict";
import { test } from "node:test";
import { QUEUE_GROUPS, queuesOf } from "../src/index.ts";

test("WORKER_QUEUES' groups: `all` is every kind, `gpu` the kinds that run or merge models", () => {
  assert.deepEqual(QUEUE_GROUPS.all, [
    "separation",
    "voice-conversion",
    "voice-blend",
    "tts",
    "audio-analysis",
    "vocal-repair",
    "mastering",
    "harmony",
    "pipeline",
    "voice-model-media",
    "voice-model-build",
    "webhook-delivery",
    "model-install",
  ]);
  assert.deepEqual(QUEUE_GROUPS.gpu, [
    "separation",
    "voice-conversion",
    "voice-blend",
    "tts",
    "vocal-repair",
    "harmony",
    "voice-model-media",
  ]);
});

test("a WORKER_QUEUES value names kinds and groups, each kind once, in the catalogue's order; other names are returned", () => {
  assert.deepEqual(queuesOf("tts, separation"), { kinds: ["separation", "tts"], unknown: [] });
  assert.deepEqual(queuesOf("gpu,webhook-delivery,tts"), {
    kinds: [
      "separation",
      "voice-conversion",
      "voice-blend",
      "tts",
      "vocal-repair",
      "harmony",
      "voice-model-media",
      "webhook-delivery",
    ],
    unknown: [],
  });
  assert.deepEqual(queuesOf("all").kinds, QUEUE_GROUPS.all);
  assert.deepEqual(queuesOf("separation,karaoke,,GPU"), { kinds: ["separation"], unknown: ["karaoke", "GPU"] });
  assert.deepEqual(queuesOf(" , "), { kinds: [], unknown: [] });
});
