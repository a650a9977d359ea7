import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { EnsembleMixer } from "../src/ensemble.ts";
import { ENSEMBLE_ALGORITHMS, type EnsembleAlgorithm } from "../src/ensemble-names.ts";

const dir = new URL("./fixtures/ensemble/", import.meta.url);
const fixture = JSON.parse(readFileSync(new URL("cases.json", dir), "utf8")) as {
  members: number;
  frames: number;
  cases: { algorithm: EnsembleAlgorithm; frames: number }[];
};
const f32 = (file: string) => {
  const bytes = readFileSync(new URL(file, dir));
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
};
const all = f32("members.f32");
const members = Array.from({ length: fixture.members }, (_, m) =>
  all.subarray(m * fixture.frames * 2, (m + 1) * fixture.frames * 2),
);

/** The mixer's output when the members arrive in blocks of the given frame counts (the rest in one last block). */
async function mix(algorithm: EnsembleAlgorithm, inputs: Float32Array[], blockFrames: number[]): Promise<Float32Array> {
  const mixer = await EnsembleMixer.create(algorithm, inputs.length);
  const frames = inputs[0]!.length / 2;
  const out = new Float32Array(inputs[0]!.length);
  let at = 0;
  let written = 0;
  const put = (block: Float32Array) => {
    out.set(block, written);
    written += block.length;
  };
  for (const n of [...blockFrames, Infinity]) {
    const end = Math.min(frames, at + n);
    put(mixer.push(inputs.map((x) => x.subarray(at * 2, end * 2))));
    at = end;
    if (at === frames) break;
  }
  put(mixer.finish());
  assert.equal(written, out.length, "as many frames out as in");
  return out;
}

function relativeError(ours: Float32Array, theirs: Float32Array): number {
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < theirs.length; i++) {
    worst = Math.max(worst, Math.abs(ours[i]! - theirs[i]!));
    scale = Math.max(scale, Math.abs(theirs[i]!));
  }
  return worst / scale;
}

describe("EnsembleMixer", () => {
  for (const { algorithm, frames } of fixture.cases) {
    it(`${algorithm} matches the upstream Python on three members to 1e-5 relative`, async () => {
      const reference = f32(`${algorithm}.f32`);
      const ours = await mix(algorithm, members, [4097, 1, 1000]);
      // UVR's inverse drops the samples after the last whole hop; the rest must match
      assert.equal(reference.length, frames * 2);
      const error = relativeError(ours.subarray(0, frames * 2), reference);
      assert.ok(error < 1e-5, `${algorithm}: relative error ${error}`);
    });
  }

  it("covers every algorithm the API accepts", () => {
    assert.deepEqual(fixture.cases.map((c) => c.algorithm).sort(), [...ENSEMBLE_ALGORITHMS].sort());
  });

  it("the tie rules differ as upstream's do: min_mag keeps the first of equal magnitudes, uvr_min_spec the last", async () => {
    // members a and -a tie in every bin: the first keeps a, UVR's fold ends on -a
    const a = members[0]!;
    const negated = a.map((v) => -v);
    const first = await mix("min_mag", [a, negated], []);
    const last = await mix("uvr_min_spec", [a, negated], []);
    assert.ok(relativeError(first, a) < 1e-5);
    assert.ok(relativeError(last, negated) < 1e-5);
  });

  it("gives the same output whatever the block sizes", async () => {
    for (const algorithm of ["median_wave", "max_mag"] as const) {
      const whole = await mix(algorithm, members, [fixture.frames]);
      const small = await mix(algorithm, members, Array(200).fill(37));
      assert.deepEqual(small, whole);
    }
  });

  it("returns as many frames as it took for streams shorter than a window, and for none", async () => {
    for (const frames of [0, 1, 700, 1024, 2048]) {
      const inputs = [members[0]!.subarray(0, frames * 2), members[1]!.subarray(0, frames * 2)];
      const out = await mix("uvr_max_spec", inputs, []);
      assert.equal(out.length, frames * 2);
    }
  });

  it("holds no more after two minutes than after one second: memory is flat in the stream's length", async () => {
    const mixer = await EnsembleMixer.create("avg_mag", 2);
    const block = new Float32Array(44100 * 2).fill(0.25);
    let frames = mixer.push([block, block]).length / 2;
    const held = mixer.heldBytes;
    for (let i = 1; i < 120; i++) frames += mixer.push([block, block]).length / 2;
    assert.equal(mixer.heldBytes, held);
    frames += mixer.finish().length / 2;
    assert.equal(frames, 44100 * 120);
  });

  it("refuses fewer than two members and blocks of different lengths", async () => {
    await assert.rejects(EnsembleMixer.create("avg_wave", 1), /2 or more members/);
    const mixer = await EnsembleMixer.create("avg_wave", 2);
    assert.throws(() => mixer.push([new Float32Array(4), new Float32Array(6)]), /same length/);
  });
});
