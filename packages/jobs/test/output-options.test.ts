import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { asksForOutput, resolveOutputOptions, stemsProblem } from "../src/output-options.ts";

describe("output options", () => {
  it("a create that asks for nothing asks for no output control; any one field does", () => {
    assert.equal(asksForOutput({}), false);
    assert.equal(asksForOutput({ sampleRate: 48000 }), true);
    assert.equal(asksForOutput({ stems: ["vocals"] }), true);
  });

  it("resolves what was not asked with the server's lossless format and that format's default samples", () => {
    assert.deepEqual(resolveOutputOptions({ sampleRate: 22050 }, "flac").options, {
      format: "flac",
      sampleFormat: "s24",
      compressionLevel: 5,
      sampleRate: 22050,
      stems: null,
    });
    assert.deepEqual(resolveOutputOptions({ outputFormat: "wav", stems: [" vocals "] }, "flac").options, {
      format: "wav",
      sampleFormat: "f32",
      compressionLevel: null,
      sampleRate: null,
      stems: ["vocals"],
    });
  });

  it("refuses 32-bit float in FLAC, naming the server's format when the create named none", () => {
    assert.match(
      resolveOutputOptions({ sampleFormat: "f32" }, "flac").problems![0]!,
      /sampleFormat=f32 .*the server's lossless format \(flac\)/,
    );
    assert.match(resolveOutputOptions({ sampleFormat: "f32", outputFormat: "flac" }, "wav").problems![0]!, /outputFormat=flac/);
    assert.equal(resolveOutputOptions({ sampleFormat: "f32" }, "wav").problems, undefined);
  });

  it("lists every problem of a combination, each naming its field", () => {
    const { problems } = resolveOutputOptions(
      { outputFormat: "wav", compressionLevel: 3, sampleRate: 50000, stems: ["a", "a", ""] },
      "wav",
    );
    assert.equal(problems?.length, 4);
    assert.match(problems!.join("\n"), /compressionLevel[\s\S]*sampleRate 50000[\s\S]*at least one stem[\s\S]*"a" twice/);
  });

  it("names the stems a job does not publish and the ones it does", () => {
    assert.equal(stemsProblem(["vocals"], ["vocals", "backing"], "vocal separation"), null);
    assert.equal(
      stemsProblem(["vocals", "piano"], ["vocals", "backing"], "vocal separation"),
      'stems names "piano", which this vocal separation does not publish (its stems: vocals, backing)',
    );
  });
});
