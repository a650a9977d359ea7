import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { AudioDecodeError, decodeToPcm } from "../src/index.ts";
import { readStereo, sine, snrDb, toneOf, withTempDir, writeTone } from "./support/fixtures.ts";

const TARGET_RATE = 44100;

interface Case {
  container: "wav" | "flac" | "mp3" | "webm";
  channels: number;
  sampleRate: number;
}

const CODEC_ARGS: Record<Case["container"], string[]> = {
  wav: ["-c:a", "pcm_s16le"],
  flac: ["-c:a", "flac"],
  mp3: ["-c:a", "libmp3lame", "-b:a", "192k"],
  webm: ["-c:a", "libopus", "-b:a", "160k"],
};

const cases: Case[] = [];
for (const sampleRate of [22050, 44100, 48000]) {
  for (const channels of [1, 2, 6]) {
    cases.push({ container: "wav", channels, sampleRate }, { container: "flac", channels, sampleRate });
    if (channels <= 2) cases.push({ container: "mp3", channels, sampleRate });
  }
}
// Opus only runs at 48 kHz
for (const channels of [1, 2, 6]) cases.push({ container: "webm", channels, sampleRate: 48000 });

function rms(x: Float32Array, from: number, to: number): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += x[i] * x[i];
  return Math.sqrt(sum / (to - from));
}

describe("decodeToPcm", () => {
  for (const c of cases) {
    const lossless = c.container === "wav" || c.container === "flac";
    it(`decodes ${c.container} ${c.channels}ch ${c.sampleRate} Hz to stereo float32 at 44.1 kHz${lossless ? " with the exact length" : ""}`, async () => {
      await withTempDir(async (dir) => {
        const frames = Math.round(c.sampleRate * 1.3) + 17;
        const path = join(dir, `in.${c.container}`);
        await writeTone(path, { sampleRate: c.sampleRate, channels: c.channels, frames, codecArgs: CODEC_ARGS[c.container] });
        const { left, right } = await readStereo(path, TARGET_RATE);
        const expected = Math.round((frames * TARGET_RATE) / c.sampleRate);
        if (lossless) assert.equal(left.length, expected);
        else assert.ok(Math.abs(left.length - expected) <= 2, `lossy length ${left.length} vs ${expected}`);

        const from = 2000;
        const to = left.length - 2000;
        if (c.channels === 1) {
          assert.deepEqual(left, right, "mono is duplicated to both channels");
          const { freq, amp } = toneOf(0);
          if (lossless) assert.ok(snrDb(sine(left.length, TARGET_RATE, freq, amp), left, from, to) > 60);
          else assert.ok(Math.abs(rms(left, from, to) - amp / Math.SQRT2) < 0.02, "mono keeps unity gain");
        } else if (c.channels === 2) {
          for (const [channel, pcm] of [left, right].entries()) {
            const { freq, amp } = toneOf(channel);
            if (lossless) assert.ok(snrDb(sine(pcm.length, TARGET_RATE, freq, amp), pcm, from, to) > 60, `channel ${channel}`);
            else assert.ok(Math.abs(rms(pcm, from, to) - amp / Math.SQRT2) < 0.02, `channel ${channel} level`);
          }
        } else {
          assert.ok(rms(left, from, to) > 0.1 && rms(right, from, to) > 0.1, "downmix keeps both sides");
          assert.ok(snrDb(left, right, from, to) < 10, "left and right stay different");
        }
      });
    });
  }

  it("yields blocks of exactly blockFrames frames except the last", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, "in.wav");
      await writeTone(path, { sampleRate: 44100, channels: 2, frames: 10_000 });
      const sizes: number[] = [];
      for await (const block of decodeToPcm(path, { sampleRate: 44100, blockFrames: 4096 })) sizes.push(block.length / 2);
      assert.deepEqual(sizes, [4096, 4096, 1808]);
    });
  });

  it("rejects a file that is not audio with AudioDecodeError", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, "notes.mp3");
      await writeFile(path, "this is not audio at all\n".repeat(100));
      await assert.rejects(async () => {
        for await (const _ of decodeToPcm(path, { sampleRate: 44100 })) void _;
      }, AudioDecodeError);
    });
  });

  it("stops ffmpeg when aborted", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, "in.wav");
      await writeTone(path, { sampleRate: 44100, channels: 2, frames: 44100 * 20 });
      const controller = new AbortController();
      let blocks = 0;
      await assert.rejects(
        async () => {
          for await (const _ of decodeToPcm(path, { sampleRate: 48000, blockFrames: 1024, signal: controller.signal })) {
            if (++blocks === 3) controller.abort();
          }
        },
        { name: "AbortError" },
      );
      assert.ok(blocks < 100);
    });
  });
});
