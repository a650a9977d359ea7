import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { promisify } from "node:util";
import { encodeStereoPcm, type WavSampleFormat } from "../src/index.ts";
import { WavFileWriter } from "../src/wav-writer.ts";
import { ffprobeField, readStereo, withTempDir } from "./support/fixtures.ts";

const run = promisify(execFile);

/** A WAV file's chunks in order, by id (the RIFF/RF64 header aside). */
function chunks(file: Buffer): { id: string; body: Buffer }[] {
  const found: { id: string; body: Buffer }[] = [];
  let at = 12;
  while (at + 8 <= file.length) {
    const id = file.toString("latin1", at, at + 4);
    const length = file.readUInt32LE(at + 4);
    // an RF64 data chunk's size is 2^32 − 1: the rest of the file
    const end = id === "data" && length === 0xffff_ffff ? file.length : at + 8 + length;
    found.push({ id, body: file.subarray(at + 8, end) });
    at = end + (length & 1);
  }
  return found;
}

function body(file: Buffer, id: string): Buffer {
  const chunk = chunks(file).find((c) => c.id === id);
  assert.ok(chunk, `no ${id} chunk`);
  return chunk.body;
}

/**
 * Interleaved stereo float samples that test the conversions: a sweep past full scale, both
 * full-scale ends, values half-way between two integers of each format (rounding to even), and
 * noise.
 */
function testSamples(frames: number): Float32Array {
  const out = new Float32Array(2 * frames);
  let seed = 7;
  for (let i = 0; i < out.length; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    out[i] = (seed / 2 ** 32 - 0.5) * 3;
  }
  const special = [
    1,
    -1,
    1.5,
    -1.5,
    0,
    -0,
    0.5 / 32768,
    1.5 / 32768,
    -2.5 / 32768,
    0.5 / 2 ** 31,
    3.5 / 2 ** 31,
    32767.5 / 32768,
    -32768.5 / 32768,
  ];
  out.set(special, 0);
  return out;
}

async function ffmpegWav(dir: string, samples: Float32Array, sampleFormat: WavSampleFormat): Promise<Buffer> {
  const raw = join(dir, `in-${sampleFormat}.f32`);
  const out = join(dir, `ffmpeg-${sampleFormat}.wav`);
  await writeFile(raw, samples);
  const codec = { f32: "pcm_f32le", s16: "pcm_s16le", s24: "pcm_s24le" }[sampleFormat];
  await run("ffmpeg", [
    "-v",
    "error",
    "-y",
    "-f",
    "f32le",
    "-ar",
    "44100",
    "-ac",
    "2",
    "-i",
    raw,
    "-c:a",
    codec,
    "-rf64",
    "auto",
    out,
  ]);
  return readFile(out);
}

async function writeBlocks(
  path: string,
  samples: Float32Array,
  options: { sampleFormat: WavSampleFormat; frames?: number; rf64Above?: number },
) {
  const writer = new WavFileWriter({ path, sampleRate: 44100, ...options });
  // uneven blocks, as a separation yields them
  for (let at = 0; at < samples.length; at += 2 * 1234)
    await writer.write(samples.subarray(at, Math.min(samples.length, at + 2 * 1234)));
  await writer.finish();
  return readFile(path);
}

describe("WavFileWriter", () => {
  for (const sampleFormat of ["f32", "s16", "s24"] as const) {
    it(`writes the samples and header ffmpeg writes for ${sampleFormat}, without ffmpeg's LIST chunk`, async () => {
      await withTempDir(async (dir) => {
        const samples = testSamples(5000);
        const ours = await writeBlocks(join(dir, `ours-${sampleFormat}.wav`), samples, { sampleFormat });
        const theirs = await ffmpegWav(dir, samples, sampleFormat);
        assert.ok(body(ours, "data").equals(body(theirs, "data")), "the samples differ from ffmpeg's");
        assert.ok(body(ours, "fmt ").equals(body(theirs, "fmt ")), "the fmt chunk differs from ffmpeg's");
        assert.deepEqual(
          chunks(ours).map((c) => c.id),
          chunks(theirs)
            .map((c) => c.id)
            .filter((id) => id !== "LIST"),
        );
        if (sampleFormat === "f32") assert.ok(body(ours, "fact").equals(body(theirs, "fact")));
        assert.equal(ours.toString("latin1", 0, 4), "RIFF");
        assert.equal(ours.readUInt32LE(4), ours.length - 8);
        assert.equal(await ffprobeField(join(dir, `ours-${sampleFormat}.wav`), "stream=duration_ts"), "5000");
      });
    });
  }

  it("pads with silence or cuts to the frames asked for", async () => {
    await withTempDir(async (dir) => {
      const samples = testSamples(3000);
      const long = await writeBlocks(join(dir, "long.wav"), samples, { sampleFormat: "f32", frames: 4000 });
      const data = body(long, "data");
      assert.equal(data.length, 4000 * 8);
      assert.ok(data.subarray(0, 3000 * 8).equals(Buffer.from(samples.buffer)));
      assert.ok(data.subarray(3000 * 8).every((b) => b === 0));
      const short = await writeBlocks(join(dir, "short.wav"), samples, { sampleFormat: "s16", frames: 1000 });
      assert.equal(body(short, "data").length, 1000 * 4);
      assert.equal(body(short, "fmt ").length, 16);
    });
  });

  it("becomes RF64, as ffmpeg's -rf64 auto does, past the size a RIFF header holds", async () => {
    await withTempDir(async (dir) => {
      const samples = testSamples(2000);
      const path = join(dir, "rf64.wav");
      const file = await writeBlocks(path, samples, { sampleFormat: "f32", rf64Above: 1000 });
      assert.equal(file.toString("latin1", 0, 4), "RF64");
      assert.equal(file.readUInt32LE(4), 0xffff_ffff);
      const ds64 = body(file, "ds64");
      assert.equal(ds64.readBigUInt64LE(0), BigInt(file.length - 8));
      assert.equal(ds64.readBigUInt64LE(8), BigInt(2000 * 8));
      assert.equal(ds64.readBigUInt64LE(16), 2000n);
      assert.equal(await ffprobeField(path, "stream=duration_ts"), "2000");
      const back = await readStereo(path, 44100);
      assert.equal(back.left.length, 2000);
      assert.equal(back.left[5], samples[10]);
      assert.equal(back.right[5], samples[11]);
    });
  });

  it("is what StereoPcmEncoder uses for WAV at the blocks' rate (no ffmpeg: no LIST chunk), not when it resamples", async () => {
    await withTempDir(async (dir) => {
      const samples = testSamples(4410);
      async function* blocks() {
        yield samples;
      }
      const same = join(dir, "same.wav");
      const resampled = join(dir, "resampled.wav");
      await encodeStereoPcm(blocks(), { inputSampleRate: 44100, targets: [{ format: "wav", path: same }] });
      await encodeStereoPcm(blocks(), {
        inputSampleRate: 44100,
        outputSampleRate: 48000,
        targets: [{ format: "wav", path: resampled }],
      });
      assert.ok(!chunks(await readFile(same)).some((c) => c.id === "LIST"));
      assert.ok(chunks(await readFile(resampled)).some((c) => c.id === "LIST"));
      assert.ok(body(await readFile(same), "data").equals(Buffer.from(samples.buffer)));
    });
  });
});
