import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  decodeFloat,
  download,
  makeAudio,
  makeSong,
  probe,
  snrDb,
  startDeployment,
  upload,
  waitForEnd,
  type Deployment,
} from "../testing/harness.ts";

describe("separation jobs through the API and the worker", () => {
  let d: Deployment;
  before(async () => {
    d = await startDeployment();
  });
  after(async () => {
    await d?.stop();
  });

  const inputs: Array<{ name: string; make: () => Promise<string> }> = [
    { name: "wav (stereo 44.1 kHz)", make: () => makeSong("song.wav", 6) },
    { name: "mp3 (48 kHz)", make: () => makeSong("song.mp3", 5, ["-ar", "48000", "-b:a", "192k"]) },
    { name: "flac (mono 22.05 kHz)", make: () => makeSong("song.flac", 5, ["-ac", "1", "-ar", "22050"]) },
    { name: "webm (opus)", make: () => makeSong("song.webm", 5, ["-ar", "48000", "-c:a", "libopus"]) },
  ];

  for (const input of inputs) {
    it(`separates a ${input.name} upload into downloadable lead vocals, harmony, reverb and backing that add up to the input`, async () => {
      const path = await input.make();
      const created = await upload(d, path, "vocal-separations");
      assert.equal(created.status, 200, await created.clone().text());
      const job = (await created.json()) as { id: number; status: string };
      assert.equal(job.status, "running");

      const done = await waitForEnd(d, `vocal-separations/${job.id}`);
      assert.equal(done.status, "success", done.errorMessage);
      assert.equal(done.progress, 100);
      assert.match(done.jobEndTime, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} \+00:00$/);
      // the shipped vocal-split model (models/vocalsplit.onnx) splits the whole vocal
      const instruments = ["vocals", "harmony", "reverb", "backing"];
      assert.deepEqual(
        done.stemFileUrls.map((s: { instrument: string }) => s.instrument),
        instruments,
      );
      assert.deepEqual(
        done.lossyStemFileUrls.map((s: { instrument: string }) => s.instrument),
        instruments,
      );

      const source = await probe(path);
      const reference = await decodeFloat(path);
      const stemPaths = await Promise.all(done.stemFileUrls.map((s: { url: string }) => download(s.url)));
      const wholePath = await download(done.vocalAudioFileUrl);
      const backingPath = await download(done.backingAudioFileUrl);
      for (const output of [...stemPaths, wholePath, backingPath]) {
        const info = await probe(output);
        assert.equal(info.sampleRate, source.sampleRate, "lossless output keeps the input's rate");
        const decoded = await decodeFloat(output);
        assert.ok(
          Math.abs(decoded.length - reference.length) <= 2,
          `length ${decoded.length / 2} vs input ${reference.length / 2} frames`,
        );
      }
      const sumOf = (signals: Float32Array[]): Float32Array => {
        const sum = new Float32Array(Math.min(...signals.map((x) => x.length)));
        for (const x of signals) for (let i = 0; i < sum.length; i++) sum[i]! += x[i]!;
        return sum;
      };
      const stems = await Promise.all(stemPaths.map(decodeFloat));
      const [whole, backing] = await Promise.all([decodeFloat(wholePath), decodeFloat(backingPath)]);
      for (const [what, sum] of [
        ["vocals + harmony + reverb + backing", sumOf(stems)],
        ["the whole vocal + backing", sumOf([whole, backing])],
      ] as const)
        assert.ok(snrDb(reference, sum) > 40, `${what} reconstructs the mixture (SNR ${snrDb(reference, sum).toFixed(1)} dB)`);
      const parts = sumOf(stems.slice(0, 3));
      assert.ok(
        snrDb(whole, parts) > 90,
        `lead + harmony + reverb is the whole vocal (SNR ${snrDb(whole, parts).toFixed(1)} dB)`,
      );

      for (const url of [done.lossyVocalAudioFileUrl, ...done.lossyStemFileUrls.map((s: { url: string }) => s.url)]) {
        const lossy = await probe(await download(url));
        assert.equal(lossy.codec, "mp3");
        assert.ok(Math.abs(lossy.duration - source.duration) < 0.1, `mp3 lasts ${lossy.duration} s, input ${source.duration} s`);
      }
    });
  }

  it("splits a song into vocals, drums, bass and other, with the vocal and backing fields filled", async () => {
    const path = await makeSong("split.wav", 5);
    const created = await upload(d, path, "stem-splits");
    assert.equal(created.status, 200);
    const job = (await created.json()) as { id: number; status: string };
    const done = await waitForEnd(d, `stem-splits/${job.id}`);
    assert.equal(done.status, "success", done.errorMessage);
    const instruments = done.stemFileUrls.map((s: { instrument: string }) => s.instrument);
    assert.deepEqual([...instruments].sort(), ["bass", "drums", "other", "vocals"]);
    assert.equal(new Set(instruments).size, instruments.length);
    assert.deepEqual(
      done.lossyStemFileUrls.map((s: { instrument: string }) => s.instrument),
      instruments,
    );
    assert.ok(done.vocalAudioFileUrl && done.backingAudioFileUrl && done.lossyVocalAudioFileUrl);

    const reference = await decodeFloat(path);
    const stems = await Promise.all(done.stemFileUrls.map(async (s: { url: string }) => decodeFloat(await download(s.url))));
    for (const stem of stems) assert.ok(Math.abs(stem.length - reference.length) <= 2);
  });

  it("ends a job whose audio is corrupt as error with a reason, without retrying", async () => {
    const good = await makeAudio("tone.flac", ["-f", "lavfi", "-i", "sine=f=440:d=4", "-ac", "2", "-ar", "44100"]);
    const { readFile, writeFile } = await import("node:fs/promises");
    const bytes = await readFile(good);
    const { randomFillSync } = await import("node:crypto");
    randomFillSync(bytes, 200);
    const corrupt = good.replace("tone.flac", "corrupt.flac");
    await writeFile(corrupt, bytes);

    const created = await upload(d, corrupt, "vocal-separations");
    assert.equal(created.status, 200, await created.clone().text());
    const job = (await created.json()) as { id: number; status: string };
    const done = await waitForEnd(d, `vocal-separations/${job.id}`, 60_000);
    assert.equal(done.status, "error");
    assert.match(done.errorMessage, /could not be decoded/);
    assert.ok(done.jobEndTime);
    assert.equal(done.vocalAudioFileUrl, null);
    assert.deepEqual(done.stemFileUrls, []);
  });
});
