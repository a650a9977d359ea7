import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, isAbsolute, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { measureLoudness } from "@mixdown/analysis/loudness";
import { normalizeLoudness } from "../src/index.ts";

const run = promisify(execFile);
const fixtures = join(import.meta.dirname, "fixtures", "matchering");

/** The two-pass recipe as ffmpeg's documentation and most guides write it, run with ffmpeg directly. */
async function ffmpegTwoPass(input: string, out: string, i: number, tp: number, lra: number): Promise<void> {
  const first = await run("ffmpeg", [
    "-hide_banner",
    "-nostats",
    "-i",
    input,
    "-af",
    `loudnorm=I=${i}:TP=${tp}:LRA=${lra}:print_format=json`,
    "-f",
    "null",
    "-",
  ]);
  const m = JSON.parse(first.stderr.slice(first.stderr.lastIndexOf("{"))) as Record<string, string>;
  const second =
    `loudnorm=I=${i}:TP=${tp}:LRA=${lra}:measured_I=${m.input_i}:measured_TP=${m.input_tp}` +
    `:measured_LRA=${m.input_lra}:measured_thresh=${m.input_thresh}:offset=${m.target_offset}:linear=true`;
  await run("ffmpeg", ["-hide_banner", "-nostats", "-y", "-i", input, "-af", second, "-ar", "44100", "-c:a", "pcm_s24le", out]);
}

async function synthesize(path: string, expression: string, rate: number, seconds: number): Promise<void> {
  await run("ffmpeg", [
    "-nostdin",
    "-loglevel",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    `aevalsrc=${expression}:s=${rate}:d=${seconds}`,
    "-c:a",
    "pcm_s16le",
    path,
  ]);
}

describe("the loudness mode is ffmpeg's two-pass loudnorm", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mastering-loudnorm-"));
    // songs whose loudness moves (loudnorm's linear mode needs a measured range above 0 LU)
    const swell = (amp: string, voice: string) => `(${amp})*(${voice})`;
    await synthesize(
      join(dir, "swelling-stereo.wav"),
      `'${swell("0.1+0.35*(0.5+0.5*sin(2*PI*t/6))", "0.6*sin(2*PI*110*t)+0.3*sin(2*PI*440*t)+0.2*(random(0)-0.5)")}|${swell("0.1+0.35*(0.5+0.5*sin(2*PI*t/6))", "0.6*sin(2*PI*110*t+1)+0.3*sin(2*PI*554*t)+0.2*(random(1)-0.5)")}'`,
      44100,
      12,
    );
    await synthesize(
      join(dir, "swelling-quiet-mono-48k.wav"),
      `'${swell("0.01+0.04*(0.5+0.5*sin(2*PI*t/5))", "0.6*sin(2*PI*196*t)+0.3*sin(2*PI*784*t)+0.2*(random(0)-0.5)")}'`,
      48000,
      10,
    );
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const cases = [
    { name: "a stereo song down to -23 LUFS (linear)", input: "swelling-stereo.wav", i: -23, tp: -1, lra: 11, mode: "linear" },
    {
      name: "a quiet mono 48 kHz song up to -20 LUFS, -1 dBTP (linear)",
      input: "swelling-quiet-mono-48k.wav",
      i: -20,
      tp: -1,
      lra: 11,
      mode: "linear",
    },
    {
      name: "a loud song to -9 LUFS, -2 dBTP: the peak forces loudnorm's dynamic mode",
      input: join(fixtures, "reference-loud-stereo.wav"),
      i: -9,
      tp: -2,
      lra: 7,
      mode: "dynamic",
    },
  ] as const;
  for (const c of cases) {
    test(`${c.name}: integrated loudness within 0.1 LU of ffmpeg's own two-pass result`, async () => {
      const input = isAbsolute(c.input) ? c.input : join(dir, c.input);
      const ours = join(dir, `${basename(c.input)}.ours.wav`);
      const mp3 = join(dir, `${basename(c.input)}.ours.mp3`);
      const theirs = join(dir, `${basename(c.input)}.ffmpeg.wav`);
      const progress: number[] = [];
      const { measured, applied } = await normalizeLoudness(input, {
        target: { integratedLufs: c.i, truePeakDb: c.tp },
        sampleRate: 44100,
        outputs: [
          { format: "wav", path: ours, bitDepth: 24 },
          { format: "mp3", path: mp3 },
        ],
        onProgress: (f) => progress.push(f),
      });
      await ffmpegTwoPass(input, theirs, c.i, c.tp, c.lra);
      const [a, b, before, lossy] = await Promise.all([
        measureLoudness(ours),
        measureLoudness(theirs),
        measureLoudness(input),
        measureLoudness(mp3),
      ]);
      assert.equal(applied.normalizationType, c.mode);
      assert.ok(Math.abs(a.integratedLufs! - b.integratedLufs!) <= 0.1, `ours ${a.integratedLufs}, ffmpeg's ${b.integratedLufs}`);
      if (c.mode === "linear") {
        // one gain, the target less loudnorm's own measurement (which reads these songs up to 0.8 LU below ebur128)
        const gain = a.integratedLufs! - before.integratedLufs!;
        assert.ok(Math.abs(gain - (c.i - measured.inputI)) <= 0.1, `gain ${gain} for ${c.i} - ${measured.inputI}`);
        assert.ok(a.truePeakDbtp! <= c.tp + 0.1, `true peak ${a.truePeakDbtp}`);
      }
      assert.ok(Math.abs(lossy.integratedLufs! - a.integratedLufs!) <= 0.2, `mp3 ${lossy.integratedLufs}`);
      assert.deepEqual(progress, [0.5, 1]);
    });
  }
});
