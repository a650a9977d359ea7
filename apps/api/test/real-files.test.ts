import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { ffprobeView, REAL_FILES, realFilePath } from "../../../fixtures/real-files/index.ts";
import { countDecodedFramesWithin } from "@mixdown/audio";
import { assertUnchanged, footprint, multipart, sortedKeys, startHarness, type Harness } from "./helpers.ts";

const run = promisify(execFile);

/** The pid of the process whose command line holds `argument` (the decoder fluent-ffmpeg started), once it exists. */
async function processWithArgument(argument: string, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      const cmdline = (() => {
        try {
          return readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
        } catch {
          return [];
        }
      })();
      if (cmdline.includes(argument)) return Number(entry);
    }
    if (Date.now() > deadline) throw new Error(`no process with ${argument} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

let h: Harness;
let caller: Awaited<ReturnType<Harness["newCaller"]>>;
let voiceModelId: number;
before(async () => {
  h = await startHarness("s3");
  caller = await h.newCaller();
  voiceModelId = (await h.createModel({ title: "Tenor", ownerId: caller.callerId })).id;
});
after(async () => {
  await h?.stop();
});

function post(route: string, fields: Record<string, string | number>, part: string, content: Buffer) {
  const form = multipart(fields, [{ name: part, filename: "recording.bin", content }]);
  return h.app.inject({
    method: "POST",
    url: `/api/kits/v1/${route}`,
    headers: { ...form.headers, ...caller.auth },
    payload: form.payload,
  });
}

describe("real files: streamed and unusual containers", () => {
  for (const file of REAL_FILES) {
    test(`${file.name} is what it claims (ffprobe: ${file.codec}, ${file.sampleRate} Hz, ${file.channels} ch, duration ${file.durationStated ? "stated" : "not stated"})`, async () => {
      const view = await ffprobeView(realFilePath(file.name));
      assert.equal(view.codec, file.codec);
      assert.equal(view.sampleRate, file.sampleRate);
      assert.equal(view.channels, file.channels);
      assert.equal(view.videoStreams, file.video ? 1 : 0);
      if (file.durationStated)
        assert.ok(
          view.statedDuration !== null && Math.abs(view.statedDuration - file.seconds) < 0.1,
          `stated ${view.statedDuration}`,
        );
      else
        assert.equal(
          view.statedDuration,
          null,
          "the fixture must not state a duration, or it no longer tests finding one by decoding",
        );
    });

    test(`a vocal separation accepts ${file.name}`, async () => {
      const res = await post("vocal-separations", {}, "inputFile", await readFile(realFilePath(file.name)));
      assert.equal(res.statusCode, 200, res.body);
      const row = await h.prisma.separationJob.findUnique({ where: { id: res.json().id } });
      assert.equal(row?.inputFormat, file.format);
      assert.equal(await h.app.ctx.storage.exists(row!.inputKey), true);
    });

    if (file.format !== "webm") {
      test(`a voice conversion accepts ${file.name}`, async () => {
        const res = await post("voice-conversions", { voiceModelId }, "soundFile", await readFile(realFilePath(file.name)));
        assert.equal(res.statusCode, 201, res.body);
        const row = await h.prisma.voiceConversionJob.findUnique({ where: { id: res.json().id } });
        assert.equal(row?.inputFormat, file.format);
      });
    }
  }

  test("a voice conversion still refuses a MediaRecorder-style WebM (415: the interface takes wav, mp3 or flac there)", async () => {
    const before = await footprint(h);
    const res = await post(
      "voice-conversions",
      { voiceModelId },
      "soundFile",
      await readFile(realFilePath("webm-opus-stream-48k-stereo.webm")),
    );
    assert.equal(res.statusCode, 415, res.body);
    assert.match(res.json().message, /soundFile must be wav, mp3 or flac audio/);
    await assertUnchanged(h, before);
  });

  test("a streamed WebM cut before its first audio block → 422 'has no audio (duration 0)', nothing stored", async () => {
    const whole = await readFile(realFilePath("webm-opus-stream-48k-stereo.webm"));
    // The first Cluster (id 1F 43 B6 75, a 2-byte size, a 3-byte Timestamp) and then its first SimpleBlock (A3)
    const cluster = whole.indexOf(Buffer.from([0x1f, 0x43, 0xb6, 0x75]));
    const firstBlock = cluster + 9;
    assert.equal(whole[firstBlock], 0xa3);
    const before = await footprint(h);
    const res = await post("vocal-separations", {}, "inputFile", whole.subarray(0, firstBlock));
    assert.equal(res.statusCode, 422, res.body);
    const body = res.json();
    assert.deepEqual(sortedKeys(body), ["error", "message", "statusCode"]);
    assert.equal(body.message, "inputFile has no audio (duration 0)");
    await assertUnchanged(h, before);
  });

  test("a streamed FLAC whose frames are garbage → 422 naming it, nothing stored", async () => {
    const whole = await readFile(realFilePath("flac-stream-44k1-stereo.flac"));
    // keep fLaC + STREAMINFO (4 + 4 + 34 bytes) and the Vorbis comment, then noise where the frames were
    const frames = whole.indexOf(Buffer.from([0xff, 0xf8]));
    const broken = Buffer.concat([whole.subarray(0, frames), Buffer.alloc(whole.length - frames, 0x5a)]);
    const before = await footprint(h);
    const res = await post("vocal-separations", {}, "inputFile", broken);
    assert.equal(res.statusCode, 422, res.body);
    assert.equal(res.json().message, "inputFile has no audio (duration 0)");
    await assertUnchanged(h, before);
  });

  test("a WebM cut inside its header → 422 'not decodable' that names no server path", async () => {
    const whole = await readFile(realFilePath("webm-opus-stream-48k-stereo.webm"));
    const before = await footprint(h);
    const res = await post("vocal-separations", {}, "inputFile", whole.subarray(0, 200));
    assert.equal(res.statusCode, 422, res.body);
    assert.match(res.json().message, /^inputFile is not decodable webm audio: /);
    assert.doesNotMatch(res.json().message, /\/tmp|upload-|inputFile:/);
    await assertUnchanged(h, before);
  });
});

describe("the length check of uploads whose container states none", () => {
  test("counts streamed FLAC to the sample and WebM within a frame, inside the time limit", async () => {
    assert.deepEqual(await countDecodedFramesWithin(realFilePath("flac-stream-8k-mono.flac"), 10_000), {
      frames: 12_000,
      complete: true,
    });
    for (const [name, rate] of [
      ["webm-opus-stream-48k-stereo.webm", 48_000],
      ["webm-vorbis-stream-22k05-mono.webm", 22_050],
      ["webm-vp8-opus-stream.webm", 48_000],
    ] as const) {
      const { frames, complete } = await countDecodedFramesWithin(realFilePath(name), 10_000);
      assert.ok(complete && Math.abs(frames / rate - 1.5) < 0.03, `${name}: ${frames} frames`);
    }
  });

  test("a count cut short by its limit returns what it saw as a lower bound; the limit is the decoder's CPU time, not the clock", async () => {
    // An hour of streamed FLAC (written to a pipe: no length stated), as a recorder or a pipeline
    // writes it. Counting it takes ffmpeg about 3 s of CPU, its start-up about 0.35 s.
    const dir = await mkdtemp(path.join(os.tmpdir(), "mixdown-count-"));
    const long = path.join(dir, "long-stream.flac");
    try {
      await run("sh", ["-c", `ffmpeg -v error -f lavfi -i "sine=f=440:d=3600:r=8000" -ac 1 -c:a flac -f flac - > ${long}`]);
      const cut = await countDecodedFramesWithin(long, 1_000);
      assert.equal(cut.complete, false);
      assert.ok(cut.frames > 0 && cut.frames < 3600 * 8000, `${cut.frames} frames`);
      assert.deepEqual(await countDecodedFramesWithin(long, 60_000), { frames: 3600 * 8000, complete: true });

      // A decoder held off the CPU for 4 s (as a loaded machine does) spends none of a 3 s limit:
      // the count (about 1 s of CPU) still completes. A wall clock would have cut it.
      const short = path.join(dir, "short-stream.flac");
      await run("sh", ["-c", `ffmpeg -v error -f lavfi -i "sine=f=440:d=600:r=8000" -ac 1 -c:a flac -f flac - > ${short}`]);
      const counting = countDecodedFramesWithin(short, 3_000);
      const decoder = await processWithArgument(short, 5_000);
      process.kill(decoder, "SIGSTOP");
      await new Promise((r) => setTimeout(r, 4_000));
      process.kill(decoder, "SIGCONT");
      assert.deepEqual(await counting, { frames: 600 * 8000, complete: true });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
