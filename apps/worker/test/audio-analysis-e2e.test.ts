import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { testFilesDir } from "@mixdown/devstack";
import { chordPiece, writeFloatWav } from "@mixdown/analysis/testing";
import { makeAudio, postForm, startDeployment, waitForEnd, type Deployment } from "../testing/harness.ts";

describe("audio analyses through the API and the worker", () => {
  let d: Deployment;
  let dir: string;
  before(async () => {
    dir = await testFilesDir("audio-analysis-");
    d = await startDeployment({ WORKER_QUEUES: "audio-analysis,separation" });
  });
  after(async () => {
    await d?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("an mp3 of a piece in A minor at 96 BPM with drums: success, its key, tempo, beats, loudness and duration on the record", async () => {
    const wav = join(dir, "piece.wav");
    await writeFloatWav(wav, [chordPiece({ tonic: 9, minor: true, bpm: 96, seconds: 12, drums: true })], 44100);
    const mp3 = await makeAudio("piece.mp3", ["-i", wav, "-c:a", "libmp3lame", "-b:a", "192k"]);
    const res = await postForm(d, "audio-analyses", { inputFile: { path: mp3 } });
    assert.equal(res.status, 200, await res.clone().text());
    const created = (await res.json()) as { id: number };
    const job = await waitForEnd(d, `audio-analyses/${created.id}`);
    assert.equal(job.status, "success", job.errorMessage);
    assert.equal(job.progress, 100);
    assert.match(job.analyzer, /^essentia\.js .+; ffmpeg ebur128$/);
    const { analysis } = job;
    assert.deepEqual({ key: analysis.key.key, scale: analysis.key.scale }, { key: "A", scale: "minor" });
    assert.ok(analysis.key.confidence > 0 && analysis.key.confidence <= 1);
    assert.ok(Math.abs(analysis.tempo.bpm - 96) < 96 * 0.04, `tempo ${analysis.tempo.bpm}`);
    assert.ok(analysis.tempo.beats.length > 12, "a beat about every 0.625 s");
    const gaps = analysis.tempo.beats.slice(1).map((b: number, i: number) => b - analysis.tempo.beats[i]);
    assert.ok(Math.abs(gaps.reduce((a: number, b: number) => a + b, 0) / gaps.length - 0.625) < 0.03);
    assert.ok(Math.abs(analysis.durationSeconds - 12) < 0.1, `duration ${analysis.durationSeconds}`);
    assert.ok(analysis.loudness.integratedLufs < -10 && analysis.loudness.integratedLufs > -40);
    assert.ok(analysis.loudness.truePeakDbtp < 0);
    assert.equal(typeof analysis.loudness.loudnessRangeLu, "number");
    // the key's usage counts the input's seconds
    const usage = await d.prisma.usageRecord.findFirst({ where: { jobKind: "audio_analysis", rowId: created.id } });
    assert.ok(usage && Math.abs(usage.seconds - 12) < 0.2);
  });

  it("a stem split with analyze=true: the input and each stem analysed, in the stems' order; without it, no `analysis` key", async () => {
    const wav = join(dir, "split.wav");
    await writeFloatWav(wav, [chordPiece({ tonic: 9, minor: true, bpm: 96, seconds: 8, drums: true })], 44100);
    const analysed = await postForm(d, "stem-splits", { inputFile: { path: wav }, analyze: "true" });
    assert.equal(analysed.status, 200, await analysed.clone().text());
    const created = (await analysed.json()) as { id: number; analysis: unknown };
    assert.equal(created.analysis, null, "null while it runs");
    const plain = (await (await postForm(d, "stem-splits", { inputFile: { path: wav } })).json()) as { id: number };

    const job = await waitForEnd(d, `stem-splits/${created.id}`);
    assert.equal(job.status, "success", job.errorMessage);
    const { input, stems } = job.analysis;
    assert.deepEqual({ key: input.key.key, scale: input.key.scale }, { key: "A", scale: "minor" });
    assert.ok(Math.abs(input.tempo.bpm - 96) < 96 * 0.04, `tempo ${input.tempo.bpm}`);
    assert.ok(Math.abs(input.durationSeconds - 8) < 0.05);
    assert.deepEqual(
      stems.map((s: { instrument: string }) => s.instrument),
      job.stemFileUrls.map((s: { instrument: string }) => s.instrument),
    );
    for (const stem of stems) {
      assert.ok(
        Math.abs(stem.analysis.durationSeconds - 8) < 0.05,
        `${stem.instrument} lasts ${stem.analysis.durationSeconds} s`,
      );
      assert.equal(typeof stem.analysis.loudness.loudnessRangeLu, "number");
    }

    const other = await waitForEnd(d, `stem-splits/${plain.id}`);
    assert.equal(other.status, "success", other.errorMessage);
    assert.equal("analysis" in other, false, "a Kits client's record is what it always was");
  });

  it("digital silence: success with no key, no tempo and no integrated loudness", async () => {
    const silence = await makeAudio("silence.flac", [
      "-f",
      "lavfi",
      "-i",
      "anullsrc=r=44100:cl=stereo",
      "-t",
      "3",
      "-c:a",
      "flac",
    ]);
    const res = await postForm(d, "audio-analyses", { inputFile: { path: silence } });
    assert.equal(res.status, 200);
    const job = await waitForEnd(d, `audio-analyses/${((await res.json()) as { id: number }).id}`);
    assert.equal(job.status, "success", job.errorMessage);
    assert.equal(job.analysis.key, null);
    assert.equal(job.analysis.tempo, null);
    assert.equal(job.analysis.loudness.integratedLufs, null);
  });
});
