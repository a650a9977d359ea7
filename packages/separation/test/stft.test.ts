import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { TorchStft } from "../src/stft.ts";

const dir = new URL("./fixtures/torch-stft/", import.meta.url);
const { cases } = JSON.parse(readFileSync(new URL("cases.json", dir), "utf8")) as {
  cases: {
    name: string;
    nFft: number;
    hop: number;
    normalized: boolean;
    padMode: "reflect" | "constant";
    length: number;
    frames: number;
  }[];
};
const f32 = (file: string) => {
  const bytes = readFileSync(new URL(file, dir));
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
};

function maxError(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    worst = Math.max(worst, Math.abs(a[i] - b[i]));
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return worst / scale;
}

describe("TorchStft", () => {
  for (const c of cases) {
    it(`matches torch.stft and torch.istft (${c.name}: n_fft ${c.nFft}, hop ${c.hop}, ${c.padMode}${c.normalized ? ", normalized" : ""})`, async () => {
      const stft = await TorchStft.create(c);
      const spec = stft.forward(f32(`${c.name}.input.f32`));
      assert.equal(spec.frames, c.frames);
      assert.ok(maxError(spec.data, f32(`${c.name}.stft.f32`)) < 1e-5);
      const y = stft.inverse(f32(`${c.name}.other.f32`), c.frames, c.length);
      assert.ok(maxError(y, f32(`${c.name}.istft.f32`)) < 1e-5);
    });
  }

  it("inverts its own forward to the input (center=True, length given)", async () => {
    const stft = await TorchStft.create({ nFft: 4096, hop: 1024 });
    const x = Float32Array.from({ length: 44100 }, (_, i) => Math.sin(i * 0.01) + 0.3 * Math.sin(i * 0.37));
    const spec = stft.forward(x);
    assert.ok(maxError(stft.inverse(spec.data, spec.frames, x.length), x) < 1e-5);
  });

  it("refuses reflect padding of a signal shorter than half a window, as torch does", async () => {
    const stft = await TorchStft.create({ nFft: 64, hop: 16 });
    assert.throws(() => stft.forward(new Float32Array(20)), /reflect padding needs more than 32 samples/);
  });
});
