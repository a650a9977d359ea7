/// <reference path="../src/essentia-js.d.ts" />
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import essentiaJs from "essentia.js";
import { analyzeAudioFile, measureLoudness } from "../src/index.ts";
import { chordPiece, libebur128TruePeak, PITCH_CLASSES, sine, writeFloatWav } from "../testing/signals.ts";

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "mixdown-analysis-test-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Essentia itself, called as its documentation shows, on the samples: the reference. */
function essentiaReference(samples: Float32Array) {
  const essentia = new essentiaJs.Essentia(essentiaJs.EssentiaWASM);
  const vector = essentia.arrayToVector(samples);
  try {
    const key = essentia.KeyExtractor(vector);
    const rhythm = essentia.RhythmExtractor2013(vector);
    return {
      key: { key: key.key, scale: key.scale, confidence: key.strength },
      tempo: { bpm: rhythm.bpm, confidence: rhythm.confidence, beats: Array.from(essentia.vectorToArray(rhythm.ticks)) },
    };
  } finally {
    vector.delete();
  }
}

describe("key and tempo are Essentia's on the same samples", () => {
  const pieces = [
    { tonic: 0, minor: false, bpm: 120, drums: true },
    { tonic: 9, minor: true, bpm: 96, drums: false },
    { tonic: 6, minor: false, bpm: 140, drums: true },
    { tonic: 3, minor: true, bpm: 75, drums: true },
  ];
  for (const piece of pieces) {
    const name = `${PITCH_CLASSES[piece.tonic]} ${piece.minor ? "minor" : "major"} at ${piece.bpm} BPM${piece.drums ? " with drums" : ""}`;
    test(name, async () => {
      const samples = chordPiece({ ...piece, seconds: 12 });
      const path = join(dir, `piece-${piece.tonic}-${piece.bpm}.wav`);
      await writeFloatWav(path, [samples], 44100);
      const analysis = await analyzeAudioFile(path);
      const reference = essentiaReference(samples);
      assert.deepEqual(analysis.key, reference.key);
      assert.deepEqual(analysis.tempo, reference.tempo);
      // and Essentia is right about these
      assert.equal(
        `${analysis.key?.key} ${analysis.key?.scale}`,
        `${PITCH_CLASSES[piece.tonic]} ${piece.minor ? "minor" : "major"}`,
      );
      assert.ok(Math.abs(analysis.tempo!.bpm / piece.bpm - 1) < 0.04, `tempo ${analysis.tempo?.bpm} for ${piece.bpm}`);
      assert.equal(analysis.durationSeconds, 12);
    });
  }

  test("silence has no key and no tempo, and no integrated loudness or true peak", async () => {
    const path = join(dir, "silence.wav");
    await writeFloatWav(path, [new Float32Array(44100 * 3)], 44100);
    const analysis = await analyzeAudioFile(path);
    assert.equal(analysis.key, null);
    assert.equal(analysis.tempo, null);
    assert.deepEqual(analysis.loudness, { integratedLufs: null, loudnessRangeLu: 0, truePeakDbtp: null });
  });
});

/** Essentia's own EBU R128 measure (LoudnessEBUR128) of a two-channel signal: integrated and range. */
function essentiaLoudness(left: Float32Array, right: Float32Array, rate: number) {
  const essentia = new essentiaJs.Essentia(essentiaJs.EssentiaWASM);
  const [l, r] = [essentia.arrayToVector(left), essentia.arrayToVector(right)];
  try {
    const result = essentia.LoudnessEBUR128(l, r, 0.1, rate);
    result.momentaryLoudness.delete();
    result.shortTermLoudness.delete();
    return { i: result.integratedLoudness, lra: result.loudnessRange };
  } finally {
    l.delete();
    r.delete();
  }
}

describe("loudness is EBU R128's: within 0.1 of Essentia's LoudnessEBUR128, libebur128's true peak and EBU Tech 3341/3342", () => {
  const within = (actual: number | null, expected: number, tolerance: number, what: string) =>
    assert.ok(
      actual !== null && Math.abs(actual - expected) <= tolerance,
      `${what}: ${actual}, expected ${expected} ± ${tolerance}`,
    );

  test("Tech 3341 cases 1 and 2: a stereo 1 kHz sine at -23 and -33 dBFS is -23.0 and -33.0 LUFS", async () => {
    for (const dbfs of [-23, -33]) {
      const tone = sine({ frequency: 1000, dbfs, seconds: 20, rate: 48000 });
      const path = join(dir, `sine${dbfs}.wav`);
      await writeFloatWav(path, [tone, tone], 48000);
      const measured = await measureLoudness(path);
      within(measured.integratedLufs, dbfs, 0.1, "integrated");
      within(measured.truePeakDbtp, dbfs, 0.1, "true peak");
      within(measured.integratedLufs, essentiaLoudness(tone, tone, 48000).i, 0.1, "integrated against Essentia");
      within(measured.truePeakDbtp, await libebur128TruePeak(path), 0.1, "true peak against libebur128");
    }
  });

  test("Tech 3342 case 1: 20 s at -20 dBFS then 20 s at -30 dBFS has a loudness range of 10 LU", async () => {
    const tone = new Float32Array(48000 * 40);
    tone.set(sine({ frequency: 1000, dbfs: -20, seconds: 20, rate: 48000 }));
    tone.set(sine({ frequency: 1000, dbfs: -30, seconds: 20, rate: 48000 }), 48000 * 20);
    const path = join(dir, "lra.wav");
    await writeFloatWav(path, [tone, tone], 48000);
    const measured = await measureLoudness(path);
    within(measured.loudnessRangeLu, 10, 0.1, "loudness range");
    // both levels pass the relative gate: their mean power, 10 log10((10^-2 + 10^-3) / 2)
    within(measured.integratedLufs, -22.6, 0.1, "integrated");
    const reference = essentiaLoudness(tone, tone, 48000);
    within(measured.loudnessRangeLu, reference.lra, 0.1, "loudness range against Essentia");
    within(measured.integratedLufs, reference.i, 0.1, "integrated against Essentia");
  });

  test("music-like pieces at 44.1 kHz: integrated and range within 0.1 of Essentia's, true peak of libebur128's", async () => {
    for (const piece of [
      { tonic: 2, minor: false, bpm: 110, drums: true },
      { tonic: 11, minor: true, bpm: 65, drums: false },
    ]) {
      const samples = chordPiece({ ...piece, seconds: 15 });
      const path = join(dir, `loud-${piece.tonic}.wav`);
      await writeFloatWav(path, [samples, samples], 44100);
      const measured = await measureLoudness(path);
      const reference = essentiaLoudness(samples, samples, 44100);
      within(measured.integratedLufs, reference.i, 0.1, "integrated");
      within(measured.loudnessRangeLu, reference.lra, 0.1, "loudness range");
      within(measured.truePeakDbtp, await libebur128TruePeak(path), 0.1, "true peak");
    }
  });

  test("a file that is not audio is an AudioDecodeError naming ffmpeg's reason, not the path", async () => {
    const path = join(dir, "text.wav");
    await import("node:fs/promises").then((fs) => fs.writeFile(path, "plain text, no audio"));
    await assert.rejects(measureLoudness(path), (err: Error) => err.name === "AudioDecodeError" && !err.message.endsWith(path));
  });
});
