import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import ffmpeg from "fluent-ffmpeg";
import { decodeWithFfmpeg } from "../src/decode-to-pcm.ts";
import { AudioDecodeError, decodeToPcm, probeAudio } from "../src/index.ts";
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

  /**
   * A WAV file of `frames` random samples: every bit pattern for integers, floats over ±1.5 with
   * some denormals; WAVE_FORMAT_EXTENSIBLE above 16 bits, as ffmpeg and most DAWs write it.
   */
  async function writeRandomWav(
    path: string,
    codec: string,
    channels: number,
    sampleRate: number,
    frames: number,
    channelMask = channels === 1 ? 0x4 : 0x3,
  ): Promise<void> {
    const bits = Number(/(\d+)/.exec(codec)![1]);
    const float = codec.startsWith("pcm_f");
    const extensible = bits > 16 || channels > 2;
    const blockAlign = (channels * bits) / 8;
    const data = Buffer.alloc(frames * blockAlign);
    let seed = 12345;
    const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    for (let i = 0; i < data.length / (bits / 8); i++) {
      const at = (i * bits) / 8;
      if (codec === "pcm_f32le") data.writeFloatLE(i % 97 === 0 ? 1e-40 * random() : (random() - 0.5) * 3, at);
      else if (codec === "pcm_f64le") data.writeDoubleLE(i % 97 === 0 ? 1e-310 * random() : (random() - 0.5) * 3, at);
      else for (let b = 0; b < bits / 8; b++) data[at + b] = Math.floor(random() * 256);
    }
    // the extremes of the integer range, at the start
    if (!float && frames >= 2) (data.fill(0xff, 0, blockAlign), data.fill(0x00, blockAlign, 2 * blockAlign));
    const fmt = Buffer.alloc(extensible ? 40 : 16);
    fmt.writeUInt16LE(extensible ? 0xfffe : float ? 3 : 1, 0);
    fmt.writeUInt16LE(channels, 2);
    fmt.writeUInt32LE(sampleRate, 4);
    fmt.writeUInt32LE(sampleRate * blockAlign, 8);
    fmt.writeUInt16LE(blockAlign, 12);
    fmt.writeUInt16LE(bits, 14);
    if (extensible) {
      fmt.writeUInt16LE(22, 16);
      fmt.writeUInt16LE(bits, 18);
      fmt.writeUInt32LE(channelMask, 20);
      // KSDATAFORMAT_SUBTYPE_PCM / _IEEE_FLOAT: the format tag, then the fixed GUID tail
      Buffer.from([float ? 3 : 1, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71]).copy(fmt, 24);
    }
    const chunk = (id: string, body: Buffer) => {
      const head = Buffer.alloc(8);
      head.write(id, 0, "latin1");
      head.writeUInt32LE(body.length, 4);
      return Buffer.concat([head, body, Buffer.alloc(body.length & 1)]);
    };
    // a LIST chunk after the samples, as taggers write it: not audio
    const body = Buffer.concat([
      Buffer.from("WAVE"),
      chunk("fmt ", fmt),
      chunk("data", data),
      chunk("LIST", Buffer.from("INFOISFT\x04\x00\x00\x00abc\x00")),
    ]);
    await writeFile(path, Buffer.concat([chunk("RIFF", body).subarray(0, 8), body]));
  }

  /** fluent-ffmpeg back to the `ffmpeg` on PATH, as it finds it when nothing is set */
  const ffmpegFromPath = () => ffmpeg.setFfmpegPath("ffmpeg");

  async function collect(blocks: AsyncIterable<Float32Array>): Promise<{ bytes: Buffer; sizes: number[] }> {
    const parts: Buffer[] = [];
    const sizes: number[] = [];
    for await (const block of blocks) {
      parts.push(Buffer.from(block.buffer, block.byteOffset, block.byteLength));
      sizes.push(block.length / 2);
    }
    return { bytes: Buffer.concat(parts), sizes };
  }

  for (const codec of ["pcm_u8", "pcm_s16le", "pcm_s24le", "pcm_s32le", "pcm_f32le", "pcm_f64le"]) {
    for (const channels of [1, 2]) {
      it(`reads ${codec} ${channels}ch WAV at its own rate without ffmpeg, to the same bytes as ffmpeg's decode`, async () => {
        await withTempDir(async (dir) => {
          const path = join(dir, "in.wav");
          await writeRandomWav(path, codec, channels, 32000, 10_007);
          const probe = await probeAudio(path);
          assert.equal(probe.codec, codec);
          const viaFfmpeg = await collect(decodeWithFfmpeg(path, { sampleRate: 32000, probe, blockFrames: 4096 }));
          // with no ffmpeg to run, only the direct read can succeed
          ffmpeg.setFfmpegPath(join(dir, "no-ffmpeg-here"));
          let direct;
          try {
            direct = await collect(decodeToPcm(path, { sampleRate: 32000, blockFrames: 4096 }));
          } finally {
            ffmpegFromPath();
          }
          assert.deepEqual(direct.sizes, [4096, 4096, 1815]);
          assert.equal(viaFfmpeg.bytes.length, 10_007 * 8);
          assert.ok(direct.bytes.equals(viaFfmpeg.bytes), "the same float32 bytes as ffmpeg's");
        });
      });
    }
  }

  it("leaves two channels that are not left and right (FC+LFE) to ffmpeg, which remixes them", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, "in.wav");
      await writeRandomWav(path, "pcm_s24le", 2, 32000, 5000, 0x4 | 0x8);
      const probe = await probeAudio(path);
      const viaFfmpeg = await collect(decodeWithFfmpeg(path, { sampleRate: 32000, probe, blockFrames: 32768 }));
      const decoded = await collect(decodeToPcm(path, { sampleRate: 32000 }));
      assert.ok(decoded.bytes.equals(viaFfmpeg.bytes), "decoded as ffmpeg decodes it");
      // which is not the samples as they are
      const raw = new Float32Array(viaFfmpeg.bytes.buffer, viaFfmpeg.bytes.byteOffset, viaFfmpeg.bytes.length / 4);
      const data = await readFile(path);
      const firstRight = data.readIntLE(data.indexOf("data") + 8 + 3, 3) / 8388608;
      assert.notEqual(raw[1], firstRight, "ffmpeg remixed the two speakers");
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
