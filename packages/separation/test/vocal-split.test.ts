import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { concatSamples, decodeToPcm, encodeStereoPcm } from "@mixdown/audio";
import { resolveVocalSplit, splitsInOnePass } from "../src/installed-models.ts";
import { writeRemainder } from "../src/vocal-split.ts";

const split = { name: "vocalsplit", stems: ["lead", "harmony", "reverb"] };

describe("which vocal-split model runs", () => {
  it("the named model when it is installed and has lead, harmony and reverb stems", () => {
    assert.deepEqual(resolveVocalSplit("vocalsplit", [split]), { model: split });
  });
  it("none, with the reason, when the setting is none, the model is missing, or it cannot split a vocal", () => {
    assert.match(resolveVocalSplit("none", [split]).reason!, /SEPARATION_MODEL_VOCAL_SPLIT=none/);
    assert.match(resolveVocalSplit("vocalsplit", []).reason!, /"vocalsplit" .* is not installed/);
    assert.match(
      resolveVocalSplit("stems", [{ name: "stems", stems: ["vocals", "drums", "bass", "other"] }]).reason!,
      /has no lead, harmony and reverb stems/,
    );
  });
});

describe("when the split runs in the same pass as the first model", () => {
  it("when both run at one rate and the split model's family reads its input once", () => {
    const first = { sampleRate: 44100 };
    assert.equal(splitsInOnePass(first, { sampleRate: 44100, readsInputOnce: true }), true);
    assert.equal(splitsInOnePass(first, { sampleRate: 48000, readsInputOnce: true }), false, "another rate: two steps");
    assert.equal(splitsInOnePass(first, { sampleRate: 44100, readsInputOnce: false }), false, "HTDemucs: two steps");
  });
});

describe("the lead as the remainder of the whole vocal", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mixdown-vocal-split-"));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const frames = 70_001; // not a multiple of the decoder's blocks: the last block is short
  const signal = (seed: number) => {
    const x = new Float32Array(frames * 2);
    for (let i = 0; i < x.length; i++) x[i] = 0.3 * Math.sin(i * 0.001 * seed + seed);
    return x;
  };
  async function write(name: string, x: Float32Array): Promise<string> {
    const path = join(dir, name);
    await encodeStereoPcm(
      (async function* () {
        yield x;
      })(),
      { inputSampleRate: 44100, targets: [{ format: "wav", path, sampleFormat: "f32" }] },
    );
    return path;
  }
  async function read(path: string): Promise<Float32Array> {
    const blocks: Float32Array[] = [];
    for await (const b of decodeToPcm(path, { sampleRate: 44100 })) blocks.push(b);
    return concatSamples(blocks, (n) => new Float32Array(n));
  }

  it("is whole − harmony − reverb sample by sample, so the three add up to the whole vocal", async () => {
    const [whole, harmony, reverb] = [signal(1), signal(2), signal(3)];
    const paths = await Promise.all([write("whole.wav", whole), write("harmony.wav", harmony), write("reverb.wav", reverb)]);
    const lead = join(dir, "lead.wav");
    await writeRemainder(
      paths[0]!,
      paths.slice(1),
      [{ format: "wav", path: lead, sampleFormat: "f32" }],
      new AbortController().signal,
    );
    const got = await read(lead);
    assert.equal(got.length, whole.length);
    for (let i = 0; i < got.length; i++) assert.equal(got[i], Math.fround(Math.fround(whole[i]! - harmony[i]!) - reverb[i]!));
  });

  it("refuses parts of another length than the whole vocal", async () => {
    const whole = await write("whole2.wav", signal(1));
    const short = await write("short.wav", signal(2).subarray(0, 40_000));
    await assert.rejects(
      writeRemainder(whole, [short], [{ format: "wav", path: join(dir, "x.wav") }], new AbortController().signal),
      /shorter than the whole vocal/,
    );
  });
});
