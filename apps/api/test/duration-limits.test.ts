import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { assertUnchanged, audio, footprint, multipart, startHarness, type Harness } from "./helpers.ts";

// Audio bombs: a small file can hold hours of audio (50 MB of 6 kbit/s Opus is 18 hours). Every
// job kind refuses input longer than its setting at create, whether the container states the
// length or it has to be counted.

const run = promisify(execFile);
let h: Harness;
let scratch: string;
let caller: Awaited<ReturnType<Harness["newCaller"]>>;
let voiceModelId: number;

before(async () => {
  h = await startHarness("s3", { MAX_SEPARATION_SECONDS: "5", MAX_CONVERSION_SECONDS: "5" });
  scratch = await mkdtemp(path.join(os.tmpdir(), "mixdown-duration-"));
  caller = await h.newCaller();
  voiceModelId = (await h.createModel({ title: "Tenor", ownerId: caller.callerId })).id;
});
after(async () => {
  await h?.stop();
  await rm(scratch, { recursive: true, force: true });
});

/** `seconds` of Opus in WebM written to a pipe, as a browser's MediaRecorder does: no length stated. */
async function streamedWebm(seconds: number): Promise<Buffer> {
  const out = path.join(scratch, `stream-${seconds}.webm`);
  await run("sh", [
    "-c",
    `ffmpeg -hide_banner -loglevel error -f lavfi -i sine=frequency=330:sample_rate=48000:duration=${seconds} -c:a libopus -b:a 6k -f webm pipe:1 > ${out}`,
  ]);
  return readFile(out);
}

function post(route: string, fields: Record<string, string | number>, parts: Array<{ name: string; content: Buffer }>) {
  const form = multipart(
    fields,
    parts.map((p) => ({ ...p, filename: "take.bin" })),
  );
  return h.app.inject({
    method: "POST",
    url: `/api/kits/v1/${route}`,
    headers: { ...form.headers, ...caller.auth },
    payload: form.payload,
  });
}

async function refused(
  route: string,
  fields: Record<string, string | number>,
  parts: Array<{ name: string; content: Buffer }>,
  message: RegExp,
) {
  const before = await footprint(h);
  const res = await post(route, fields, parts);
  assert.equal(res.statusCode, 422, res.body);
  assert.match(res.json().message, message);
  await assertUnchanged(h, before);
}

describe("duration limits", () => {
  test("a separation of a WAV longer than MAX_SEPARATION_SECONDS → 422 naming the limit and the file's length, nothing stored", async () => {
    await refused(
      "vocal-separations",
      {},
      [{ name: "inputFile", content: await audio("wav", 8) }],
      /^inputFile is 0:08 long; the limit is 0:05 \(MAX_SEPARATION_SECONDS = 5 s\)$/,
    );
    await refused("stem-splits", {}, [{ name: "inputFile", content: await audio("mp3", 8) }], /inputFile is 0:08 long/);
    const res = await post("vocal-separations", {}, [{ name: "inputFile", content: await audio("wav", 4) }]);
    assert.equal(res.statusCode, 200, res.body);
  });

  test("a streamed WebM that states no length is counted, and only just past the limit", async () => {
    await refused(
      "vocal-separations",
      {},
      [{ name: "inputFile", content: await streamedWebm(60) }],
      /^inputFile is more than 0:05 long; the limit is 0:05 \(MAX_SEPARATION_SECONDS = 5 s\)$/,
    );
    const res = await post("vocal-separations", {}, [{ name: "inputFile", content: await streamedWebm(3) }]);
    assert.equal(res.statusCode, 200, res.body);
  });

  test("a conversion's input and its backing track are held to MAX_CONVERSION_SECONDS, and so is a reference recording", async () => {
    await refused(
      "voice-conversions",
      { voiceModelId },
      [{ name: "soundFile", content: await audio("flac", 8) }],
      /^soundFile is 0:08 long; the limit is 0:05 \(MAX_CONVERSION_SECONDS = 5 s\)$/,
    );
    await refused(
      "voice-conversions",
      { voiceModelId },
      [
        { name: "soundFile", content: await audio("wav", 2) },
        { name: "backingSoundFile", content: await audio("wav", 8) },
      ],
      /^backingSoundFile is 0:08 long/,
    );
    await refused(
      "voice-models",
      { metadata: JSON.stringify({ title: "Long reference" }) },
      [{ name: "referenceFile", content: await audio("wav", 8) }],
      /^referenceFile is 0:08 long; the limit is 0:05 \(MAX_CONVERSION_SECONDS = 5 s\)$/,
    );
  });
});
