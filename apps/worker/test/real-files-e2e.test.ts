import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { countDecodedFrames } from "@mixdown/audio";
import { registerVoiceCatalogue } from "@mixdown/db";
import { catalogueRows } from "@mixdown/voice/catalogue";
import { ffprobeView, REAL_FILES, realFilePath, type RealFile } from "../../../fixtures/real-files/index.ts";
import { download, probe, startDeployment, upload, waitForEnd, type Deployment } from "../testing/harness.ts";

/**
 * The committed real-file fixtures (streamed FLAC, MediaRecorder-style WebM with Opus, Vorbis and
 * video, WAVE_FORMAT_EXTENSIBLE, ID3-tagged mp3 with cover art) go through the API and a worker to
 * `success`, each output at the input's rate and exactly as long as the input decodes.
 */
describe("real files through the API and the worker", () => {
  let d: Deployment;
  let aria: number;
  /** Every file's separation, created up front: the worker runs one while the test checks the last one's outputs. */
  const separations = new Map<string, Promise<{ status: number; body: string }>>();
  before(async () => {
    // native voices need no ContentVec model, so the default catalogue's is enough
    d = await startDeployment({ WORKER_QUEUES: "separation,voice-conversion" });
    await registerVoiceCatalogue(d.prisma, await catalogueRows(d.env.MODELS_DIR!));
    aria = (await d.prisma.voiceModel.findUniqueOrThrow({ where: { slug: "native-aria" } })).id;
    for (const file of REAL_FILES) {
      const created = await upload(d, realFilePath(file.name), "vocal-separations");
      separations.set(
        file.name,
        created.text().then((body) => ({ status: created.status, body })),
      );
    }
  });
  after(async () => {
    await d?.stop();
  });

  /** The input's rate and length as ffmpeg decodes it: what every lossless output must match. */
  async function expectedShape(file: RealFile): Promise<{ sampleRate: number; frames: number }> {
    const path = realFilePath(file.name);
    if (!file.durationStated) assert.equal((await ffprobeView(path)).statedDuration, null, `${file.name} must state no duration`);
    return { sampleRate: file.sampleRate, frames: await countDecodedFrames(path) };
  }

  async function assertOutputShape(url: string, expected: { sampleRate: number; frames: number }, what: string): Promise<void> {
    const out = await probe(await download(url));
    assert.equal(out.sampleRate, expected.sampleRate, `${what}: rate`);
    assert.equal(out.samples, expected.frames, `${what}: frames`);
  }

  for (const file of REAL_FILES) {
    it(`separates ${file.name}: success, the whole vocal, backing and every stem at the input's rate and decoded length`, async () => {
      const expected = await expectedShape(file);
      const created = await separations.get(file.name)!;
      assert.equal(created.status, 200, created.body);
      const job = JSON.parse(created.body) as { id: number };
      // the jobs queued before this one run first
      const done = await waitForEnd(d, `vocal-separations/${job.id}`, 240_000);
      assert.equal(done.status, "success", done.errorMessage);
      assert.equal(done.progress, 100);
      await assertOutputShape(done.vocalAudioFileUrl, expected, "vocals");
      await assertOutputShape(done.backingAudioFileUrl, expected, "backing");
      assert.deepEqual(
        done.stemFileUrls.map((s: { instrument: string }) => s.instrument),
        ["vocals", "harmony", "reverb", "backing"],
      );
      for (const stem of done.stemFileUrls as Array<{ instrument: string; url: string }>)
        await assertOutputShape(stem.url, expected, `stem ${stem.instrument}`);
      const lossyPath = await download(done.lossyVocalAudioFileUrl);
      assert.equal((await probe(lossyPath)).codec, "mp3");
      // decoded, so the LAME header's delay and padding are trimmed (ffprobe's duration keeps them:
      // a whole 72 ms frame and more at 8 kHz); a frame's rounding either way remains
      const lossyFrames = await countDecodedFrames(lossyPath);
      assert.ok(
        Math.abs(lossyFrames - expected.frames) <= 1152,
        `mp3 decodes to ${lossyFrames} frames, input ${expected.frames}`,
      );
    });
  }

  for (const file of REAL_FILES.filter((f) => f.format !== "webm")) {
    it(`converts ${file.name} to a default voice: success, output at the input's rate and decoded length`, async () => {
      const expected = await expectedShape(file);
      const form = new FormData();
      form.append("voiceModelId", String(aria));
      form.append("soundFile", new Blob([await readFile(realFilePath(file.name))]), file.name);
      const created = await fetch(`${d.baseUrl}/api/kits/v1/voice-conversions`, {
        method: "POST",
        body: form,
        headers: { authorization: `Bearer ${d.key}` },
      });
      assert.equal(created.status, 201, await created.clone().text());
      const job = (await created.json()) as { id: number };
      const done = await waitForEnd(d, `voice-conversions/${job.id}`, 120_000);
      assert.equal(done.status, "success", done.errorMessage);
      await assertOutputShape(done.outputFileUrl, expected, "converted voice");
    });
  }
});
