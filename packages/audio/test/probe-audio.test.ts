import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { AudioDecodeError, countDecodedFrames, ffprobeAudio, probeAudio } from "../src/index.ts";
import { probeWavHeader, readWavLayout } from "../src/wav-header.ts";
import { ffprobeView, REAL_FILES, realFilePath } from "../../../fixtures/real-files/index.ts";
import { withTempDir, writeTone } from "./support/fixtures.ts";

describe("probeAudio", () => {
  it("reports format, codec, rate, channels and the exact frame count of lossless files", async () => {
    await withTempDir(async (dir) => {
      const wav = join(dir, "a.wav");
      const flac = join(dir, "a.flac");
      await writeTone(wav, { sampleRate: 48000, channels: 6, frames: 123_457 });
      await writeTone(flac, { sampleRate: 22050, channels: 1, frames: 54_321, codecArgs: ["-c:a", "flac"] });
      const w = await probeAudio(wav);
      assert.deepEqual(
        {
          format: w.format,
          codec: w.codec,
          sampleRate: w.sampleRate,
          channels: w.channels,
          frames: w.frames,
          framesExact: w.framesExact,
        },
        { format: "wav", codec: "pcm_s16le", sampleRate: 48000, channels: 6, frames: 123_457, framesExact: true },
      );
      assert.ok(Math.abs(w.duration - 123_457 / 48000) < 1e-9);
      const f = await probeAudio(flac);
      assert.deepEqual(
        [f.format, f.codec, f.sampleRate, f.channels, f.frames, f.framesExact],
        ["flac", "flac", 22050, 1, 54_321, true],
      );
    });
  });

  it("marks lossy lengths as estimates, and countDecodedFrames gives the decoded length", async () => {
    await withTempDir(async (dir) => {
      const mp3 = join(dir, "a.mp3");
      const webm = join(dir, "a.webm");
      await writeTone(mp3, {
        sampleRate: 44100,
        channels: 2,
        frames: 100_000,
        codecArgs: ["-c:a", "libmp3lame", "-b:a", "128k"],
      });
      await writeTone(webm, { sampleRate: 48000, channels: 2, frames: 100_000, codecArgs: ["-c:a", "libopus"] });
      const m = await probeAudio(mp3);
      assert.equal(m.codec, "mp3");
      assert.equal(m.framesExact, false);
      assert.equal(m.bitRate, 128000);
      assert.ok(Math.abs(m.frames - 100_000) < 3000, `mp3 estimate ${m.frames}`);
      assert.equal(await countDecodedFrames(mp3), 100_000);
      const o = await probeAudio(webm);
      assert.deepEqual([o.format, o.codec, o.sampleRate, o.framesExact], ["matroska,webm", "opus", 48000, false]);
      assert.equal(await countDecodedFrames(webm), 100_000);
    });
  });

  it("counts the frames of streams whose container states no length (streamed FLAC, MediaRecorder-style WebM)", async () => {
    const unstated = REAL_FILES.filter((f) => !f.durationStated);
    assert.ok(
      unstated.some((f) => f.format === "flac") &&
        unstated.some((f) => f.codec === "opus") &&
        unstated.some((f) => f.codec === "vorbis"),
    );
    for (const file of unstated) {
      const path = realFilePath(file.name);
      assert.equal((await ffprobeView(path)).statedDuration, null, `${file.name} must state no duration`);
      const p = await probeAudio(path);
      assert.deepEqual(
        [p.codec, p.sampleRate, p.channels, p.framesExact],
        [file.codec, file.sampleRate, file.channels, true],
        file.name,
      );
      assert.equal(p.frames, await countDecodedFrames(path), file.name);
      assert.equal(p.duration, p.frames / p.sampleRate);
      // FLAC and Opus (whose container carries the encoder delay and padding) decode to the length
      // generated; Vorbis in WebM keeps its last block's padding
      if (file.codec === "vorbis")
        assert.ok(
          p.frames >= file.seconds * file.sampleRate && p.frames < (file.seconds + 0.05) * file.sampleRate,
          `${file.name}: ${p.frames}`,
        );
      else assert.equal(p.frames, file.seconds * file.sampleRate, file.name);
    }
  });

  it("rejects an empty or missing file with AudioDecodeError", async () => {
    await withTempDir(async (dir) => {
      const empty = join(dir, "empty.wav");
      await writeFile(empty, Buffer.alloc(0));
      await assert.rejects(() => probeAudio(empty), AudioDecodeError);
      await assert.rejects(() => probeAudio(join(dir, "missing.flac")), AudioDecodeError);
      await assert.rejects(() => countDecodedFrames(join(dir, "missing.flac")), AudioDecodeError);
    });
  });

  it("reads plain PCM WAV headers exactly as ffprobe reports them", async () => {
    await withTempDir(async (dir) => {
      const cases: Array<{ name: string; channels: number; sampleRate: number; args: string[] }> = [
        { name: "s16-mono", channels: 1, sampleRate: 22050, args: ["-c:a", "pcm_s16le"] },
        { name: "s24", channels: 2, sampleRate: 44100, args: ["-c:a", "pcm_s24le"] },
        { name: "s32", channels: 2, sampleRate: 48000, args: ["-c:a", "pcm_s32le"] },
        { name: "f32", channels: 2, sampleRate: 44100, args: ["-c:a", "pcm_f32le"] },
        { name: "f64", channels: 1, sampleRate: 8000, args: ["-c:a", "pcm_f64le"] },
        { name: "u8", channels: 2, sampleRate: 11025, args: ["-c:a", "pcm_u8"] },
        // WAVE_FORMAT_EXTENSIBLE (more than two channels) and a LIST chunk before the data
        { name: "ext-6ch-tagged", channels: 6, sampleRate: 48000, args: ["-c:a", "pcm_s24le", "-metadata", "title=x"] },
      ];
      for (const c of cases) {
        const path = join(dir, `${c.name}.wav`);
        await writeTone(path, { sampleRate: c.sampleRate, channels: c.channels, frames: 12_345, codecArgs: c.args });
        const fromHeader = await probeWavHeader(path);
        assert.ok(fromHeader, `${c.name}: header not read`);
        assert.deepEqual(fromHeader, await ffprobeAudio(path), c.name);
      }
    });
  });

  it("leaves WAV files it cannot vouch for to ffprobe", async () => {
    await withTempDir(async (dir) => {
      const adpcm = join(dir, "adpcm.wav");
      await writeTone(adpcm, { sampleRate: 22050, channels: 1, frames: 10_000, codecArgs: ["-c:a", "adpcm_ms"] });
      assert.equal(await probeWavHeader(adpcm), undefined);
      assert.equal((await probeAudio(adpcm)).codec, "adpcm_ms");
      // a data chunk that claims more bytes than the file holds (cut short, or streamed)
      const whole = join(dir, "whole.wav");
      await writeTone(whole, { sampleRate: 44100, channels: 2, frames: 10_000, codecArgs: ["-c:a", "pcm_s16le"] });
      const cut = join(dir, "cut.wav");
      await writeFile(cut, (await readFile(whole)).subarray(0, 20_000));
      assert.equal(await probeWavHeader(cut), undefined);
      assert.equal((await probeAudio(cut)).format, "wav");
      const notWav = join(dir, "noise.wav");
      await writeFile(notWav, Buffer.alloc(1000, 7));
      assert.equal(await probeWavHeader(notWav), undefined);
    });
  });

  it("reads a streamed WAV's placeholder data size as the rest of the file (whole frames) only when asked", async () => {
    await withTempDir(async (dir) => {
      const whole = join(dir, "whole.wav");
      await writeTone(whole, { sampleRate: 22050, channels: 1, frames: 10_000, codecArgs: ["-c:a", "pcm_s16le"] });
      const exact = await readWavLayout(whole);
      assert.ok(exact);
      const bytes = await readFile(whole);
      // as espeak-ng writes to a pipe: 0x7fffffff, or 0; and a stray odd byte at the end
      for (const placeholder of [0x7fff_ffff, 0]) {
        const streamed = Buffer.concat([bytes, Buffer.from([1])]);
        streamed.writeUInt32LE(placeholder, exact.dataOffset - 4);
        const path = join(dir, `streamed-${placeholder}.wav`);
        await writeFile(path, streamed);
        // without streamed: past the end goes to ffprobe; 0 is taken at its word
        assert.equal((await readWavLayout(path))?.dataBytes, placeholder === 0 ? 0 : undefined);
        const layout = await readWavLayout(path, { streamed: true });
        assert.ok(layout);
        assert.equal(layout.dataOffset, exact.dataOffset);
        assert.equal(layout.dataBytes, exact.dataBytes);
        assert.equal(layout.probe.frames, 10_000);
        assert.equal(layout.probe.codec, "pcm_s16le");
      }
      // an exact size is read as it is, streamed or not
      assert.deepEqual(await readWavLayout(whole, { streamed: true }), exact);
    });
  });
});
