import assert from "node:assert/strict";
import { test } from "node:test";
import { jobOutputKeys, uploadKey, voiceModelKeys } from "../src/index.ts";

// Rows keep their keys for good: these spellings are what existing rows hold, byte for byte.

test("an upload's key is uploads/<kind>/<uuid>.<ext>, a new one each time", () => {
  const key = uploadKey("vocal-separation", "mp3");
  assert.match(key, /^uploads\/vocal-separation\/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.mp3$/);
  assert.notEqual(uploadKey("vocal-separation", "mp3"), key);
  assert.match(uploadKey("voice-models", "wav"), /^uploads\/voice-models\/[0-9a-f-]{36}\.wav$/);
});

test("a job's outputs are outputs/<kind>/<rowId>/<file>, and its prefix stops at the row's own folder", () => {
  const keys = jobOutputKeys("stem-split", 7);
  assert.equal(keys.file("vocals.flac"), "outputs/stem-split/7/vocals.flac");
  assert.equal(jobOutputKeys("tts", 5).file("output.mp3"), "outputs/tts/5/output.mp3");
  assert.equal(keys.prefix, "outputs/stem-split/7/");
  assert.ok(keys.file("vocals.flac").startsWith(keys.prefix));
  assert.ok(
    !jobOutputKeys("stem-split", 70).file("vocals.flac").startsWith(keys.prefix),
    "row 7's prefix reaches row 70's files",
  );
});

test("a voice model's files are voice-models/<id>/<file>", () => {
  const keys = voiceModelKeys(3);
  assert.deepEqual(
    [keys.model, keys.index, keys.checkpoint, keys.uploadedCover("webp"), keys.cover, keys.demo],
    [
      "voice-models/3/model.onnx",
      "voice-models/3/model.index",
      "voice-models/3/model.pth",
      "voice-models/3/cover.webp",
      "voice-models/3/cover.png",
      "voice-models/3/demo.mp3",
    ],
  );
});
