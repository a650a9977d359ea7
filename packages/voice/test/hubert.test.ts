import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { describe, it } from "node:test";
import { ort } from "@mixdown/separation/ort";
import { snrDb } from "../../audio/test/support/fixtures.ts";

const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url);
async function floats(name: string): Promise<Float32Array> {
  const b = await readFile(fixture(name));
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
}

describe("HuBERT/ContentVec converted by Mixdown's own implementation (features RVC models take)", () => {
  for (const [version, width] of [
    ["v2", 64],
    ["v1", 16],
  ] as const) {
    it(`${version}: the same features as torchaudio's HuBERT on the same checkpoint, at 60 dB or more`, async () => {
      const clip = await floats("rmvpe/clip.f32");
      const reference = await floats(`hubert/reference-${version}.f32`);
      const session = await ort.InferenceSession.create(fixture(`hubert/hubert-random-${version}.onnx`).pathname);
      const out = await session.run({ source: new ort.Tensor("float32", clip, [1, 1, clip.length]) });
      const embed = out[session.outputNames[0]!]!;
      assert.deepEqual(embed.dims, [1, reference.length / width, width]);
      const ours = embed.data as Float32Array;
      const snr = snrDb(reference, ours);
      console.log(`${version}: ${snr.toFixed(1)} dB against torchaudio`);
      assert.ok(snr >= 60, `${snr} dB`);
      await session.release();
    });
  }
});
