import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { describe, it } from "node:test";
import { decodeRmvpe, RmvpePitch, rmvpeMel } from "../src/pitch/rmvpe.ts";

const fixture = (name: string) => new URL(`./fixtures/rmvpe/${name}`, import.meta.url);
async function floats(name: string): Promise<Float32Array> {
  const b = await readFile(fixture(name));
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
}
async function doubles(name: string): Promise<Float64Array> {
  const b = await readFile(fixture(name));
  return new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
}

describe("RMVPE pitch (mel and decoding in TypeScript, the network in onnxruntime)", () => {
  it("computes RVC's RMVPE log-mel of a clip (128 htk bins 30-8000 Hz, hop 160, centred) within 1e-3", async () => {
    const audio = await floats("clip.f32");
    const reference = await floats("reference.mel.f32");
    const { mel, frames, padded } = rmvpeMel(audio);
    assert.equal(frames, 1 + Math.floor(audio.length / 160));
    assert.equal(reference.length, 128 * frames);
    assert.equal(padded % 32, 0);
    let worst = 0;
    for (let m = 0; m < 128; m++)
      for (let t = 0; t < frames; t++) worst = Math.max(worst, Math.abs(mel[m * padded + t]! - reference[m * frames + t]!));
    assert.ok(worst < 1e-3, `largest log-mel difference ${worst}`);
    for (let m = 0; m < 128; m++) for (let t = frames; t < padded; t++) assert.equal(mel[m * padded + t], 0);
  });

  it("gives the f0 RVC's RMVPE class gives with the same weights: same voiced frames, within 1 cent where voiced", async () => {
    const pitch = await RmvpePitch.load(fixture("rmvpe-random.onnx").pathname);
    const f0 = await pitch.track(await floats("clip.f32"));
    const reference = await doubles("reference.f0.f64");
    assert.equal(f0.length, reference.length);
    let voiced = 0;
    let worst = 0;
    for (let t = 0; t < f0.length; t++) {
      assert.equal(f0[t]! > 0, reference[t]! > 0, `frame ${t}: ${f0[t]} vs ${reference[t]} Hz`);
      if (reference[t]! > 0) {
        voiced++;
        worst = Math.max(worst, Math.abs(1200 * Math.log2(f0[t]! / reference[t]!)));
      }
    }
    assert.ok(voiced > 50 && voiced < f0.length - 50, `${voiced} of ${f0.length} voiced: the fixture tests both decisions`);
    assert.ok(worst < 1, `largest difference ${worst} cents`);
    await pitch.close();
  });

  it("decodes like RVC: local average of the 9 bins around the best (cut at the ends), unvoiced at or below 0.03", () => {
    const hidden = new Float32Array(4 * 360);
    hidden[100] = 0.5; // frame 0: one bin -> exactly its cents
    hidden[360 + 200] = 0.4; // frame 1: two bins, weighted
    hidden[360 + 201] = 0.2;
    hidden[720 + 0] = 0.03; // frame 2: at the threshold -> unvoiced
    hidden[1080 + 0] = 0.6; // frame 3: at the low end, bins below 0 count as nothing
    hidden[1080 + 3] = 0.2;
    const f0 = decodeRmvpe(hidden, 4);
    const hz = (cents: number) => 10 * 2 ** (cents / 1200);
    const c = (i: number) => 20 * i + 1997.3794084376191;
    assert.ok(Math.abs(f0[0]! - hz(c(100))) < 1e-3);
    assert.ok(Math.abs(f0[1]! - hz((0.4 * c(200) + 0.2 * c(201)) / 0.6)) < 1e-3);
    assert.equal(f0[2], 0);
    assert.ok(Math.abs(f0[3]! - hz((0.6 * c(0) + 0.2 * c(3)) / 0.8)) < 1e-3);
  });

  it("refuses a model that is not RMVPE-shaped, naming it", async () => {
    await assert.rejects(RmvpePitch.load(new URL("./fixtures/rvc-index/flat-l2.index", import.meta.url).pathname));
  });
});
