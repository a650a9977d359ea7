import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertUnchanged, audio, footprint, multipart, sortedKeys, startHarness, type Harness } from "./helpers.ts";

// Output control (issue 55): a separation's lossless format, sample format, FLAC level, sample
// rate and stems. The harness's models are the repository's: `vocals` with the `vocalsplit`
// split (a vocal separation publishes vocals, harmony, reverb, backing) and `stems` (vocals,
// drums, bass, other).

let h: Harness;
before(async () => {
  h = await startHarness("s3");
});
after(async () => {
  await h?.stop();
});

type Kind = "vocal-separations" | "stem-splits";

async function create(auth: Record<string, string>, kind: Kind, fields: Record<string, string>) {
  const form = multipart(fields, [{ name: "inputFile", filename: "a.wav", content: await audio("wav") }]);
  return h.app.inject({
    method: "POST",
    url: `/api/kits/v1/${kind}`,
    headers: { ...form.headers, ...auth },
    payload: form.payload,
  });
}

describe("output control on separations", () => {
  test("a create with output options stores them resolved and its record has `output: null` until it succeeds", async () => {
    const caller = await h.newCaller();
    const res = await create(caller.auth, "vocal-separations", {
      outputFormat: "flac",
      sampleFormat: "s16",
      compressionLevel: "8",
      sampleRate: "22050",
      stems: "vocals,backing",
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().output, null);
    const row = await h.prisma.separationJob.findUnique({ where: { id: res.json().id } });
    assert.deepEqual(row?.outputOptions, {
      format: "flac",
      sampleFormat: "s16",
      compressionLevel: 8,
      sampleRate: 22050,
      stems: ["vocals", "backing"],
    });
    assert.equal(row?.output, null);
    const fetched = await h.app.inject({
      method: "GET",
      url: `/api/kits/v1/vocal-separations/${res.json().id}`,
      headers: caller.auth,
    });
    assert.deepEqual(fetched.json(), res.json());
  });

  test("one option alone takes the defaults for the rest: the server's format (wav) and its sample format, every stem", async () => {
    const caller = await h.newCaller();
    const cases: Array<[Record<string, string>, object]> = [
      [{ sampleFormat: "s24" }, { format: "wav", sampleFormat: "s24", compressionLevel: null, sampleRate: null, stems: null }],
      [{ outputFormat: "flac" }, { format: "flac", sampleFormat: "s24", compressionLevel: 5, sampleRate: null, stems: null }],
      [{ sampleRate: "48000" }, { format: "wav", sampleFormat: "f32", compressionLevel: null, sampleRate: 48000, stems: null }],
      [
        { stems: " drums , bass" },
        { format: "wav", sampleFormat: "f32", compressionLevel: null, sampleRate: null, stems: ["drums", "bass"] },
      ],
    ];
    for (const [fields, stored] of cases) {
      const res = await create(caller.auth, "stem-splits", fields);
      assert.equal(res.statusCode, 200, res.body);
      const row = await h.prisma.separationJob.findUnique({ where: { id: res.json().id } });
      assert.deepEqual(row?.outputOptions, stored, JSON.stringify(fields));
    }
  });

  test("a create without output options stores none and answers the record Kits clients always got (no `output` key)", async () => {
    const caller = await h.newCaller();
    for (const kind of ["vocal-separations", "stem-splits"] as const) {
      const res = await create(caller.auth, kind, {});
      assert.equal(res.statusCode, 200, res.body);
      // the whole record's keys are pinned by separations.test.ts; this one adds none
      assert.equal("output" in res.json(), false);
      const row = await h.prisma.separationJob.findUnique({ where: { id: res.json().id } });
      assert.equal(row?.outputOptions, null);
    }
  });

  describe("a combination that cannot be written is a 422 naming it, leaving nothing behind", () => {
    const cases: Array<[string, Kind, Record<string, string>, RegExp]> = [
      [
        "32-bit float in FLAC",
        "vocal-separations",
        { outputFormat: "flac", sampleFormat: "f32" },
        /sampleFormat=f32 .*outputFormat=flac.*s16 or s24/,
      ],
      [
        "a compression level with WAV",
        "stem-splits",
        { outputFormat: "wav", compressionLevel: "5" },
        /compressionLevel is a FLAC option/,
      ],
      [
        "a compression level with the server's format (wav)",
        "stem-splits",
        { compressionLevel: "0" },
        /compressionLevel .*server's lossless format \(wav\)/,
      ],
      [
        "both problems at once, each named",
        "stem-splits",
        { outputFormat: "wav", compressionLevel: "5", sampleRate: "44101" },
        /compressionLevel.*; sampleRate 44101/,
      ],
      [
        "compression level 13",
        "stem-splits",
        { outputFormat: "flac", compressionLevel: "13" },
        /compressionLevel must be between 0 and 12 \(got 13\)/,
      ],
      [
        "compression level -1",
        "stem-splits",
        { outputFormat: "flac", compressionLevel: "-1" },
        /compressionLevel must be between 0 and 12/,
      ],
      [
        "a sample rate under the range",
        "vocal-separations",
        { sampleRate: "7999" },
        /sampleRate 7999 is not an output rate \(one of 8000, .*192000 Hz\)/,
      ],
      ["a sample rate over the range", "vocal-separations", { sampleRate: "384000" }, /sampleRate 384000 is not an output rate/],
      [
        "a sample rate in the range but not a listed one",
        "stem-splits",
        { sampleRate: "44101" },
        /sampleRate 44101 is not an output rate/,
      ],
      ["a sample rate that is not a number", "stem-splits", { sampleRate: "44.1k" }, /sampleRate must be a whole number of Hz/],
      ["an unknown format", "stem-splits", { outputFormat: "mp3" }, /outputFormat must be one of wav, flac \(got "mp3"\)/],
      ["an unknown sample format", "stem-splits", { sampleFormat: "s32" }, /sampleFormat must be one of s16, s24, f32/],
      ["an empty stem subset", "vocal-separations", { stems: "" }, /stems must name at least one stem/],
      [
        "an empty name in the subset",
        "vocal-separations",
        { stems: "vocals,,backing" },
        /stems must name at least one stem, comma-separated, none empty/,
      ],
      ["a stem named twice", "stem-splits", { stems: "drums,drums" }, /stems names "drums" twice/],
      [
        "a stem a vocal separation does not publish",
        "vocal-separations",
        { stems: "vocals,piano,drums" },
        /stems names "piano", "drums", which this vocal separation does not publish \(its stems: vocals, harmony, reverb, backing\)/,
      ],
      [
        "a stem the stem split's model does not output",
        "stem-splits",
        { stems: "harmony" },
        /stems names "harmony", which this stem split does not publish \(its stems: vocals, drums, bass, other\)/,
      ],
      [
        "a stem split's derived backing, which is no stem",
        "stem-splits",
        { stems: "backing" },
        /"backing", which this stem split does not publish/,
      ],
    ];
    for (const [name, kind, fields, message] of cases) {
      test(name, async () => {
        const caller = await h.newCaller();
        const before = await footprint(h);
        const res = await create(caller.auth, kind, fields);
        assert.equal(res.statusCode, 422, res.body);
        assert.deepEqual(sortedKeys(res.json()), ["error", "message", "statusCode"]);
        assert.match(res.json().message, message);
        await assertUnchanged(h, before);
      });
    }
  });
});
