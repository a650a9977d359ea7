import assert from "node:assert/strict";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { AudioEncodeError, decodeToPcm, encodeStereoPcm, probeAudio, StereoPcmEncoder } from "../src/index.ts";
import { ffprobeField, readStereo, sine, snrDb, toneOf, withTempDir, writeTone } from "./support/fixtures.ts";

function interleave(left: Float32Array, right: Float32Array, blockFrames: number): Float32Array[] {
  const blocks: Float32Array[] = [];
  for (let at = 0; at < left.length; at += blockFrames) {
    const n = Math.min(blockFrames, left.length - at);
    const block = new Float32Array(2 * n);
    for (let i = 0; i < n; i++) {
      block[2 * i] = left[at + i];
      block[2 * i + 1] = right[at + i];
    }
    blocks.push(block);
  }
  return blocks;
}

async function* fromArray(blocks: Float32Array[]): AsyncGenerator<Float32Array> {
  yield* blocks;
}

describe("StereoPcmEncoder", () => {
  it("writes float WAV bit-exactly when no resampling happens", async () => {
    await withTempDir(async (dir) => {
      const src = join(dir, "src.wav");
      await writeTone(src, { sampleRate: 44100, channels: 2, frames: 70_001, codecArgs: ["-c:a", "pcm_f32le"] });
      const out = join(dir, "out.wav");
      await encodeStereoPcm(decodeToPcm(src, { sampleRate: 44100, blockFrames: 3000 }), {
        inputSampleRate: 44100,
        targets: [{ format: "wav", path: out }],
      });
      const a = await readStereo(src, 44100);
      const b = await readStereo(out, 44100);
      assert.deepEqual(b.left, a.left);
      assert.deepEqual(b.right, a.right);
      assert.equal(await ffprobeField(out, "stream=codec_name"), "pcm_f32le");
    });
  });

  it("resamples 48 kHz -> 44.1 kHz -> 48 kHz back to the exact input length at >90 dB SNR", async () => {
    await withTempDir(async (dir) => {
      const frames = 100_001;
      const src = join(dir, "src.wav");
      await writeTone(src, { sampleRate: 48000, channels: 2, frames, codecArgs: ["-c:a", "pcm_f32le"] });
      const targets = [
        { format: "wav", path: join(dir, "out.wav") },
        { format: "wav", path: join(dir, "out16.wav"), sampleFormat: "s16" },
        { format: "wav", path: join(dir, "out24.wav"), sampleFormat: "s24" },
        { format: "flac", path: join(dir, "out.flac") },
        { format: "flac", path: join(dir, "out16.flac"), bitDepth: 16 },
      ] as const;
      await encodeStereoPcm(decodeToPcm(src, { sampleRate: 44100 }), {
        inputSampleRate: 44100,
        outputSampleRate: 48000,
        frames,
        targets: [...targets],
      });
      for (const target of targets) {
        const probe = await probeAudio(target.path);
        assert.equal(probe.sampleRate, 48000, target.path);
        assert.equal(probe.frames, frames, `${target.path} length`);
        const { left, right } = await readStereo(target.path, 48000);
        assert.equal(left.length, frames);
        const floor = target.path.includes("16") ? 75 : 90;
        for (const [channel, pcm] of [left, right].entries()) {
          const { freq, amp } = toneOf(channel);
          const snr = snrDb(sine(frames, 48000, freq, amp), pcm, 100, frames - 100);
          assert.ok(snr > floor, `${target.path} channel ${channel}: ${snr.toFixed(1)} dB`);
        }
      }
      assert.equal(await ffprobeField(targets[2].path, "stream=codec_name"), "pcm_s24le");
      assert.equal(await ffprobeField(targets[3].path, "stream=bits_per_raw_sample"), "24");
      assert.equal(await ffprobeField(targets[4].path, "stream=sample_fmt"), "s16");
    });
  });

  it("writes each lossless target at a rate of its own, to the length at that rate, beside an mp3 at the encoder's", async () => {
    await withTempDir(async (dir) => {
      const frames = 44_101;
      const left = sine(frames, 44100, 440, 0.5);
      const right = sine(frames, 44100, 660, 0.3);
      const targets = [
        { format: "wav", path: join(dir, "low.wav"), sampleFormat: "s16", sampleRate: 22050 },
        { format: "flac", path: join(dir, "high.flac"), compressionLevel: 12, sampleRate: 96000 },
        { format: "wav", path: join(dir, "same.wav"), sampleRate: 44100 },
        { format: "mp3", path: join(dir, "lossy.mp3") },
      ] as const;
      await encodeStereoPcm(fromArray(interleave(left, right, 4096)), { inputSampleRate: 44100, frames, targets: [...targets] });
      for (const [target, rate] of [
        [targets[0], 22050],
        [targets[1], 96000],
        [targets[2], 44100],
      ] as const) {
        const probe = await probeAudio(target.path);
        assert.equal(probe.sampleRate, rate, target.path);
        assert.equal(probe.frames, Math.round((frames * rate) / 44100), `${target.path} length`);
        const out = await readStereo(target.path, rate);
        const snr = snrDb(sine(out.left.length, rate, 440, 0.5), out.left, 200, out.left.length - 200);
        assert.ok(snr > 60, `${target.path}: ${snr.toFixed(1)} dB`);
      }
      assert.equal(await ffprobeField(targets[3].path, "stream=sample_rate"), "44100");
    });
  });

  it("writes FLAC at every compression level to the same samples, smaller at 12 than at 0", async () => {
    await withTempDir(async (dir) => {
      const left = sine(30_000, 44100, 440, 0.5);
      const sizes: number[] = [];
      const samples: Float32Array[] = [];
      for (const level of [0, 12]) {
        const path = join(dir, `level-${level}.flac`);
        await encodeStereoPcm(fromArray(interleave(left, left, 4096)), {
          inputSampleRate: 44100,
          targets: [{ format: "flac", path, compressionLevel: level }],
        });
        sizes.push((await stat(path)).size);
        samples.push((await readStereo(path, 44100)).left);
      }
      assert.deepEqual(samples[1], samples[0]);
      assert.ok(sizes[1]! < sizes[0]!, `level 12 ${sizes[1]} bytes, level 0 ${sizes[0]}`);
      assert.throws(
        () =>
          new StereoPcmEncoder({
            inputSampleRate: 44100,
            targets: [{ format: "flac", path: join(dir, "x.flac"), compressionLevel: 13 }],
          }),
        /flac compression level must be 0\.\.12, got 13/,
      );
    });
  });

  it("pads or cuts to the requested length", async () => {
    await withTempDir(async (dir) => {
      const left = sine(10_000, 44100, 440, 0.5);
      for (const frames of [7_000, 12_345]) {
        const path = join(dir, `out-${frames}.flac`);
        await encodeStereoPcm(fromArray(interleave(left, left, 4096)), {
          inputSampleRate: 44100,
          frames,
          targets: [{ format: "flac", path }],
        });
        const out = await readStereo(path, 44100);
        assert.equal(out.left.length, frames);
        if (frames > 10_000) assert.equal(out.left[11_000], 0);
      }
    });
  });

  it("writes a lossless and an mp3 file from one pass, with a configurable bitrate", async () => {
    await withTempDir(async (dir) => {
      const frames = 3 * 44100;
      const left = sine(frames, 44100, 440, 0.5);
      const right = sine(frames, 44100, 660, 0.3);
      const wav = join(dir, "stem.wav");
      const mp3 = join(dir, "stem.mp3");
      const mp3Low = join(dir, "stem-128.mp3");
      const encoder = new StereoPcmEncoder({
        inputSampleRate: 44100,
        targets: [
          { format: "wav", path: wav, sampleFormat: "s16" },
          { format: "mp3", path: mp3 },
          { format: "mp3", path: mp3Low, bitrateKbps: 128 },
        ],
      });
      for (const block of interleave(left, right, 8192)) await encoder.write(block);
      await encoder.finish();
      assert.equal(encoder.framesWritten, frames);
      assert.equal((await probeAudio(wav)).frames, frames);
      assert.equal(await ffprobeField(mp3, "stream=bit_rate"), "320000");
      assert.equal(await ffprobeField(mp3Low, "stream=bit_rate"), "128000");
      const decoded = await readStereo(mp3, 44100);
      // ffmpeg writes the LAME gapless header, so the decoded length is exact
      assert.equal(decoded.left.length, frames);
      assert.ok(snrDb(left, decoded.left, 2000, frames - 2000) > 25);
      assert.ok(snrDb(right, decoded.right, 2000, frames - 2000) > 25);
    });
  });

  it("rejects with AudioEncodeError when the output cannot be written", async () => {
    await withTempDir(async (dir) => {
      const left = sine(1000, 44100, 440, 0.5);
      await assert.rejects(
        encodeStereoPcm(fromArray(interleave(left, left, 256)), {
          inputSampleRate: 44100,
          targets: [{ format: "wav", path: join(dir, "missing-dir", "out.wav") }],
        }),
        AudioEncodeError,
      );
    });
  });

  it("rejects an mp3 bitrate outside 8..320 kbps", () => {
    assert.throws(
      () => new StereoPcmEncoder({ inputSampleRate: 44100, targets: [{ format: "mp3", path: "/tmp/x.mp3", bitrateKbps: 500 }] }),
      RangeError,
    );
  });
});
