import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { decodeToPcm, probeAudio } from "@mixdown/audio";
import { denoiseFile, RNNOISE_FRAME, RNNOISE_SCALE, RnnoiseChannel } from "../src/index.ts";

const fixtures = join(import.meta.dirname, "fixtures");

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "mixdown-repair-test-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The reference demo's output (raw 16-bit little-endian mono at 48 kHz; fixtures/README.md). */
async function referenceOutput(): Promise<Int16Array> {
  const bytes = await readFile(join(fixtures, "rnnoise-demo-output.pcm"));
  return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
}

/** A file's channels at 48 kHz (WAV at that rate is read as is, without a resampler). */
async function channelsOf(path: string): Promise<[Float32Array, Float32Array]> {
  const left: number[] = [];
  const right: number[] = [];
  for await (const block of decodeToPcm(path, { sampleRate: 48_000 })) {
    for (let i = 0; i < block.length; i += 2) {
      left.push(block[i]!);
      right.push(block[i + 1]!);
    }
  }
  return [Float32Array.from(left), Float32Array.from(right)];
}

describe("denoise is RNNoise's reference build, sample for sample", () => {
  test("denoiseFile on the fixture writes the C demo's samples (its float-to-short cast truncates)", async () => {
    const out = join(dir, "denoised.wav");
    const input = join(fixtures, "noisy.wav");
    const probe = await probeAudio(input);
    const result = await denoiseFile(input, { targets: [{ format: "wav", path: out, sampleFormat: "f32" }] });
    assert.equal(result.sampleRate, 48_000);
    assert.equal(result.frames, probe.frames, "the output keeps the input's length");
    const reference = await referenceOutput();
    const [left, right] = await channelsOf(out);
    assert.equal(left.length, probe.frames);
    // the demo drops its first frame out and stops at the input's last whole frame: one frame short
    assert.equal(reference.length, probe.frames - RNNOISE_FRAME);
    let differing = 0;
    for (let i = 0; i < reference.length; i++) {
      if (Math.trunc(left[i]! * RNNOISE_SCALE) !== reference[i]) differing++;
      assert.equal(right[i], left[i], "a mono input's denoised channel is written to both");
    }
    assert.equal(differing, 0, `${differing} of ${reference.length} samples differ from the reference`);
    // and it did something: the noise between the words is gone
    const energy = (x: ArrayLike<number>, from: number, to: number) => {
      let sum = 0;
      for (let i = from; i < to; i++) sum += x[i]! * x[i]!;
      return sum;
    };
    const [noisy] = await channelsOf(input);
    assert.ok(energy(left, 0, left.length) < energy(noisy, 0, noisy.length), "the output has less energy than the input");
  });

  test("a stereo input at another rate is denoised per channel and comes back at its rate and length", async () => {
    const { execFileSync } = await import("node:child_process");
    const stereo = join(dir, "stereo-44k.flac");
    // left: the fixture; right: the fixture a tenth of a second later (different samples per channel)
    execFileSync("ffmpeg", [
      "-v",
      "error",
      "-y",
      "-i",
      join(fixtures, "noisy.wav"),
      "-filter_complex",
      "[0:a]asplit[a][b];[b]adelay=100[c];[a][c]join=inputs=2:channel_layout=stereo,aresample=44100:resampler=soxr",
      "-c:a",
      "flac",
      stereo,
    ]);
    const probe = await probeAudio(stereo);
    const out = join(dir, "stereo-denoised.wav");
    const progress: number[] = [];
    const result = await denoiseFile(stereo, {
      probe,
      targets: [{ format: "wav", path: out, sampleFormat: "f32" }],
      onProgress: (f) => progress.push(f),
    });
    const written = await probeAudio(out);
    assert.equal(written.sampleRate, 44_100);
    assert.equal(written.channels, 2);
    assert.equal(written.frames, probe.frames);
    assert.equal(result.frames, probe.frames);
    assert.equal(progress.at(-1), 1);
    const [left, right] = await channelsOf(out);
    let same = 0;
    for (let i = 0; i < left.length; i++) if (left[i] === right[i]) same++;
    assert.ok(same < left.length / 2, "each channel was denoised on its own");
  });

  test("a cancelled denoise stops and leaves no file", async () => {
    const out = join(dir, "cancelled.wav");
    const controller = new AbortController();
    controller.abort(new Error("cancelled"));
    await assert.rejects(
      denoiseFile(join(fixtures, "noisy.wav"), { targets: [{ format: "wav", path: out }], signal: controller.signal }),
      /cancelled/,
    );
    await assert.rejects(readFile(out), { code: "ENOENT" });
  });

  test("a frame of the wrong size is refused", async () => {
    const state = await RnnoiseChannel.create();
    try {
      assert.throws(() => state.process(new Float32Array(512)), /480 samples, not 512/);
    } finally {
      state.destroy();
    }
  });
});
