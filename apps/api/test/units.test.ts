import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { paginationMeta } from "../src/http/pagination.ts";
import { parseRange } from "../src/files/routes.ts";
import { formatTimestamp } from "@mixdown/records";
import { sniffAudioFormat } from "../src/uploads/audio-format.ts";
import { planBlend } from "../src/kinds/voice-blend/service.ts";
import { parseEffectChain } from "../src/kinds/voice-conversion/effects.ts";
import { audio } from "./helpers.ts";

describe("format sniffing (magic numbers, not names)", () => {
  test("recognises wav, mp3, flac, webm and refuses the rest", async () => {
    assert.equal(sniffAudioFormat(await audio("wav")), "wav");
    assert.equal(sniffAudioFormat(await audio("mp3")), "id3"); // ffmpeg writes an ID3v2 tag
    assert.equal(sniffAudioFormat((await audio("mp3")).subarray(0, 3)), null);
    assert.equal(sniffAudioFormat(await audio("flac")), "flac");
    assert.equal(sniffAudioFormat(await audio("webm")), "webm");
    assert.equal(sniffAudioFormat(await audio("mka")), "matroska");
    assert.equal(sniffAudioFormat(await audio("ogg")), null);
    assert.equal(sniffAudioFormat(Buffer.from([0xff, 0xfb, 0x90, 0x64, 0, 0])), "mp3"); // MPEG-1 layer III frame
    assert.equal(sniffAudioFormat(Buffer.from([0xff, 0xf1, 0x50, 0x80, 0, 0])), null); // AAC ADTS (layer 00)
    assert.equal(sniffAudioFormat(Buffer.from("RIFF\0\0\0\0AVI LIST", "latin1")), null);
    assert.equal(sniffAudioFormat(Buffer.from("just text")), null);
  });
});

test("timestamps: YYYY-MM-DD HH:MM:SS.ffffff +00:00 in UTC", () => {
  assert.equal(formatTimestamp(new Date("2026-01-02T03:04:05.678Z")), "2026-01-02 03:04:05.678000 +00:00");
  assert.equal(formatTimestamp(null), null);
});

test("pagination arithmetic: lastPage is at least 1 and URLs keep perPage, order and filters", () => {
  const meta = paginationMeta("/x", { page: 2, perPage: 5, order: "desc" }, 11, { myModels: "true" });
  assert.equal(meta.lastPage, 3);
  assert.equal(meta.nextPageUrl, "/x?page=3&perPage=5&order=desc&myModels=true");
  assert.equal(meta.previousPageUrl, "/x?page=1&perPage=5&order=desc&myModels=true");
  assert.equal(paginationMeta("/x", { page: 1, perPage: 10, order: "asc" }, 0).lastPage, 1);
  assert.equal(paginationMeta("/x", { page: 1, perPage: 10, order: "asc" }, 10).lastPage, 1);
  assert.equal(paginationMeta("/x", { page: 1, perPage: 10, order: "asc" }, 10).nextPageUrl, null);
});

test("blend plan: the last share is 1 minus the others, rounded, never negative", () => {
  assert.deepEqual(planBlend({ modelId1: 1, modelId2: 2, alpha: 0.7 }), { modelIds: [1, 2], alphas: [0.7, 0.3] });
  assert.deepEqual(planBlend({ modelId1: 1, modelId2: 2, modelId3: 3, alpha: 0.1, alpha2: 0.2 }).alphas, [0.1, 0.2, 0.7]);
  assert.deepEqual(
    planBlend({ modelId1: 1, modelId2: 2, modelId3: 3, modelId4: 4, alpha: 0.1, alpha2: 0.2, alpha3: 0.7 }).alphas,
    [0.1, 0.2, 0.7, 0],
  );
  assert.deepEqual(planBlend({ modelId1: 1, modelId2: 2, alpha: 1 }).alphas, [1, 0]);
  assert.throws(() => planBlend({ modelId1: 1, modelId2: 2, modelId3: 3, alpha: 0.5, alpha2: 0.50001 }), /would be negative/);
});

test("effect chains: defaults fill in, booleans enable, false drops", () => {
  assert.deepEqual(parseEffectChain("post", JSON.stringify({ delay: true, chorus: false })), {
    delay: { delay_seconds: 0.5, feedback: 0, mix: 0.5 },
  });
  assert.deepEqual(parseEffectChain("pre", undefined), {});
  assert.deepEqual(parseEffectChain("post", JSON.stringify({ reverb: { freeze_mode: true } })).reverb!.freeze_mode, 1);
});

test("byte ranges", () => {
  assert.deepEqual(parseRange("bytes=0-9", 100), { start: 0, end: 9 });
  assert.deepEqual(parseRange("bytes=90-", 100), { start: 90, end: 99 });
  assert.deepEqual(parseRange("bytes=-10", 100), { start: 90, end: 99 });
  assert.deepEqual(parseRange("bytes=50-500", 100), { start: 50, end: 99 });
  assert.equal(parseRange("bytes=100-", 100), "unsatisfiable");
  assert.equal(parseRange("bytes=0-1,5-6", 100), null);
});
