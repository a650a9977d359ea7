import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { download, makeSong, postForm, startDeployment, upload, waitForEnd, type Deployment } from "../testing/harness.ts";

// Output control (issue 55) end to end: each lossless format a job asks for is what its files are
// (ffprobe: codec, sample format and bits, rate), only the asked stems are stored, and a job that
// asks for nothing keeps the record Kits clients always got.

const execFileAsync = promisify(execFile);

interface StreamInfo {
  codec: string;
  sampleFmt: string;
  /** WAV's bits per sample, FLAC's bits per raw sample */
  bits: number;
  sampleRate: number;
}

/** The file's length in frames at its own rate (ffprobe's duration_ts, counted in 1/rate). */
async function framesOf(path: string): Promise<number> {
  const { stdout } = await execFileAsync("ffprobe", ["-v", "error", "-count_packets", "-show_streams", "-of", "json", path]);
  const stream = JSON.parse(stdout).streams[0];
  assert.equal(stream.time_base, `1/${stream.sample_rate}`);
  return Number(stream.duration_ts);
}

async function ffprobe(path: string): Promise<StreamInfo> {
  const { stdout } = await execFileAsync("ffprobe", ["-v", "error", "-show_streams", "-of", "json", path]);
  const stream = JSON.parse(stdout).streams[0];
  return {
    codec: stream.codec_name,
    sampleFmt: stream.sample_fmt,
    bits: Number(stream.codec_name === "flac" ? stream.bits_per_raw_sample : stream.bits_per_sample),
    sampleRate: Number(stream.sample_rate),
  };
}

/** The record's keys, in the order a Kits client reads them today (a job created with no Mixdown option). */
const KITS_RECORD_KEYS = [
  "id",
  "createdAt",
  "type",
  "status",
  "jobStartTime",
  "jobEndTime",
  "vocalAudioFileUrl",
  "lossyVocalAudioFileUrl",
  "backingAudioFileUrl",
  "stemFileUrls",
  "lossyStemFileUrls",
  "model",
  "ensemble",
  "progress",
  "errorMessage",
  "outputsExpireAt",
  "outputsExpiredAt",
];

type Stem = { instrument: string; url: string };

describe("output control through the API and the worker", () => {
  let d: Deployment;
  let song: string;
  before(async () => {
    d = await startDeployment();
    song = await makeSong("song.wav", 3);
  });
  after(async () => {
    await d?.stop();
  });

  async function separate(route: "vocal-separations" | "stem-splits", fields: Record<string, string>) {
    const created = await postForm(d, route, { inputFile: { path: song }, ...fields });
    assert.equal(created.status, 200, await created.clone().text());
    const { id } = (await created.json()) as { id: number };
    const done = await waitForEnd(d, `${route}/${id}`);
    assert.equal(done.status, "success", done.errorMessage);
    const kind = route === "vocal-separations" ? "vocal-separation" : "stem-split";
    const stored = (await d.api.ctx.storage.list(`outputs/${kind}/${id}/`)).map((k) => k.split("/").pop()).sort();
    return { done, stored };
  }

  const cases: Array<{
    name: string;
    route: "vocal-separations" | "stem-splits";
    fields: Record<string, string>;
    expect: StreamInfo;
    output: object;
    stored: string[];
    vocalUrls: { vocal: boolean; backing: boolean };
  }> = [
    {
      name: "FLAC 16-bit, level 8, at 22.05 kHz, the lead vocal and harmony only",
      route: "vocal-separations",
      fields: { outputFormat: "flac", sampleFormat: "s16", compressionLevel: "8", sampleRate: "22050", stems: "vocals,harmony" },
      expect: { codec: "flac", sampleFmt: "s16", bits: 16, sampleRate: 22050 },
      output: { format: "flac", sampleFormat: "s16", compressionLevel: 8, sampleRate: 22050, stems: ["vocals", "harmony"] },
      // the lead is `lead.*`, the whole vocal (the vocal URL) `vocals.*`
      stored: ["harmony.flac", "harmony.mp3", "lead.flac", "lead.mp3", "vocals.flac", "vocals.mp3"],
      vocalUrls: { vocal: true, backing: false },
    },
    {
      name: "WAV 16-bit at the input's rate, the backing only (no vocal split run)",
      route: "vocal-separations",
      fields: { sampleFormat: "s16", stems: "backing" },
      expect: { codec: "pcm_s16le", sampleFmt: "s16", bits: 16, sampleRate: 44100 },
      output: { format: "wav", sampleFormat: "s16", compressionLevel: null, sampleRate: 44100, stems: ["backing"] },
      stored: ["backing.mp3", "backing.wav"],
      vocalUrls: { vocal: false, backing: true },
    },
    {
      name: "WAV 24-bit at 48 kHz, drums and bass only",
      route: "stem-splits",
      fields: { outputFormat: "wav", sampleFormat: "s24", sampleRate: "48000", stems: "drums,bass" },
      expect: { codec: "pcm_s24le", sampleFmt: "s32", bits: 24, sampleRate: 48000 },
      output: { format: "wav", sampleFormat: "s24", compressionLevel: null, sampleRate: 48000, stems: ["drums", "bass"] },
      stored: ["bass.mp3", "bass.wav", "drums.mp3", "drums.wav"],
      vocalUrls: { vocal: false, backing: false },
    },
    {
      name: "FLAC 24-bit (the default samples), level 0, at 96 kHz, every stem",
      route: "stem-splits",
      fields: { outputFormat: "flac", compressionLevel: "0", sampleRate: "96000" },
      expect: { codec: "flac", sampleFmt: "s32", bits: 24, sampleRate: 96000 },
      output: {
        format: "flac",
        sampleFormat: "s24",
        compressionLevel: 0,
        sampleRate: 96000,
        stems: ["vocals", "drums", "bass", "other"],
      },
      stored: ["backing", "bass", "drums", "other", "vocals"].flatMap((s) => [`${s}.flac`, `${s}.mp3`]),
      vocalUrls: { vocal: true, backing: true },
    },
    {
      name: "WAV 32-bit float at 8 kHz, the vocals only",
      route: "stem-splits",
      fields: { sampleRate: "8000", stems: "vocals" },
      expect: { codec: "pcm_f32le", sampleFmt: "flt", bits: 32, sampleRate: 8000 },
      output: { format: "wav", sampleFormat: "f32", compressionLevel: null, sampleRate: 8000, stems: ["vocals"] },
      stored: ["vocals.mp3", "vocals.wav"],
      vocalUrls: { vocal: true, backing: false },
    },
  ];

  for (const c of cases) {
    it(`writes ${c.name}`, async () => {
      const { done, stored } = await separate(c.route, c.fields);
      assert.deepEqual(done.output, c.output);
      assert.deepEqual(
        done.stemFileUrls.map((s: Stem) => s.instrument),
        c.output["stems" as keyof object],
      );
      assert.deepEqual(
        done.lossyStemFileUrls.map((s: Stem) => s.instrument),
        c.output["stems" as keyof object],
      );
      assert.deepEqual(stored, c.stored, "only the asked stems (and the vocal URLs that come with them) are stored");
      assert.equal(done.vocalAudioFileUrl !== null, c.vocalUrls.vocal);
      assert.equal(done.lossyVocalAudioFileUrl !== null, c.vocalUrls.vocal);
      assert.equal(done.backingAudioFileUrl !== null, c.vocalUrls.backing);
      const lossless = [
        ...done.stemFileUrls.map((s: Stem) => s.url),
        ...[done.vocalAudioFileUrl, done.backingAudioFileUrl].filter((u) => u !== null),
      ];
      // the input's exact length at the rate written
      const inputFrames = await framesOf(song);
      for (const url of lossless) {
        const file = await download(url);
        assert.deepEqual(await ffprobe(file), c.expect, url.split("?")[0]);
        assert.equal(await framesOf(file), Math.round((inputFrames * c.expect.sampleRate) / 44100), url.split("?")[0]);
      }
      // the lossy files are as always: mp3 at the input's rate
      for (const s of done.lossyStemFileUrls as Stem[]) {
        const mp3 = await ffprobe(await download(s.url));
        assert.equal(mp3.codec, "mp3");
        assert.equal(mp3.sampleRate, 44100);
      }
    });
  }

  it("a job without output options keeps today's record (no `output`) and files: WAV 32-bit float at the input's rate", async () => {
    const created = await upload(d, song, "vocal-separations");
    assert.equal(created.status, 200);
    const running = (await created.json()) as { id: number };
    assert.deepEqual(Object.keys(running), KITS_RECORD_KEYS);
    const done = await waitForEnd(d, `vocal-separations/${running.id}`);
    assert.equal(done.status, "success", done.errorMessage);
    assert.deepEqual(Object.keys(done), KITS_RECORD_KEYS);
    assert.deepEqual(
      done.stemFileUrls.map((s: Stem) => s.instrument),
      ["vocals", "harmony", "reverb", "backing"],
    );
    for (const url of [done.vocalAudioFileUrl, done.backingAudioFileUrl, ...done.stemFileUrls.map((s: Stem) => s.url)])
      assert.deepEqual(await ffprobe(await download(url)), { codec: "pcm_f32le", sampleFmt: "flt", bits: 32, sampleRate: 44100 });
    const row = await d.prisma.separationJob.findUnique({ where: { id: running.id } });
    assert.equal(row?.outputOptions, null);
    assert.equal(row?.output, null);
  });
});
