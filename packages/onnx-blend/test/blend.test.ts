import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import onnxProto from "onnx-proto";
import { ort } from "@mixdown/separation/ort";
import { blendOnnxModels, IncompatibleModelsError, InvalidModelError } from "../src/index.ts";
import { makeSyntheticVoice, syntheticInputs } from "../testing/synthetic-voice.ts";

const { onnx } = onnxProto;
const meta = { architecture: "rvc", sample_rate: "40000" };

/** name -> { dims, dataType, values as fp32 } of every initializer, decoded by onnx-proto (an independent reader). */
function weights(bytes: Uint8Array) {
  const model = onnx.ModelProto.decode(bytes);
  const out = new Map<string, { dims: number[]; dataType: number; values: Float32Array | Uint8Array }>();
  for (const t of model.graph!.initializer!) {
    const raw = new Uint8Array(t.rawData!);
    const values =
      t.dataType === onnx.TensorProto.DataType.FLOAT
        ? new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4)
        : t.dataType === onnx.TensorProto.DataType.FLOAT16
          ? Float32Array.from(new Float16Array(raw.buffer, raw.byteOffset, raw.byteLength / 2))
          : raw;
    out.set(t.name!, { dims: t.dims!.map(Number), dataType: t.dataType!, values });
  }
  return { model, weights: out };
}

async function run(bytes: Uint8Array, frames = 20): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(bytes);
  try {
    const inputs = syntheticInputs(frames);
    const feeds = Object.fromEntries(
      Object.entries(inputs).map(([name, { data, dims }]) => [
        name,
        new ort.Tensor(data instanceof BigInt64Array ? "int64" : "float32", data, dims),
      ]),
    );
    const result = await session.run(feeds);
    return result.audio!.data as Float32Array;
  } finally {
    await session.release();
  }
}

describe("blendOnnxModels", () => {
  let dir: string;
  let a: Uint8Array;
  let b: Uint8Array;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "onnx-blend-"));
    a = makeSyntheticVoice({ seed: 1, speakers: 4, metadata: meta });
    b = makeSyntheticVoice({ seed: 2, speakers: 4, metadata: meta });
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("alphas 1 and 0 reproduce the first model bit for bit (bytes in, file out)", async () => {
    const output = join(dir, "same.onnx");
    const result = await blendOnnxModels({
      inputs: [
        { bytes: a, alpha: 1 },
        { bytes: b, alpha: 0 },
      ],
      output,
    });
    assert.equal(result.path, output);
    assert.ok(Buffer.from(await readFile(output)).equals(Buffer.from(a)));
    const fromPaths = join(dir, "a.onnx");
    await writeFile(fromPaths, a);
    const again = await blendOnnxModels({
      inputs: [
        { path: fromPaths, alpha: 1 },
        { bytes: b, alpha: 0 },
        { bytes: b, alpha: 0 },
      ],
    });
    assert.ok(again.bytes!.equals(Buffer.from(a)));
  });

  test("a 50/50 blend holds the mean of every float weight (fp32 and fp16), the first model's graph, metadata and int constants", async () => {
    const result = await blendOnnxModels({
      inputs: [
        { bytes: a, alpha: 0.5 },
        { bytes: b, alpha: 0.5 },
      ],
    });
    assert.deepEqual(result.truncated, []);
    assert.equal(result.blended, 7);
    assert.equal(result.copied, 2);
    assert.deepEqual(result.metadata, meta);
    const [wa, wb, wm] = [weights(a), weights(b), weights(result.bytes!)];
    assert.deepEqual([...wm.weights.keys()], [...wa.weights.keys()]);
    for (const [name, t] of wm.weights) {
      const x = wa.weights.get(name)!;
      const y = wb.weights.get(name)!;
      assert.deepEqual(t.dims, x.dims, name);
      assert.equal(t.dataType, x.dataType, name);
      if (t.values instanceof Uint8Array) {
        assert.deepEqual(t.values, x.values, `${name} (non-float) is copied`);
        continue;
      }
      for (let i = 0; i < t.values.length; i++) {
        const mean = (x.values[i]! + y.values[i]!) / 2;
        const expected = t.dataType === onnx.TensorProto.DataType.FLOAT16 ? Math.f16round(mean) : Math.fround(mean);
        if (t.values[i] !== expected) assert.fail(`${name}[${i}] = ${t.values[i]}, mean ${expected}`);
      }
    }
    assert.deepEqual(onnx.ModelProto.toObject(wm.model).graph.node, onnx.ModelProto.toObject(wa.model).graph.node);
    assert.deepEqual(
      wm.model.metadataProps.map((p) => [p.key, p.value]),
      Object.entries(meta),
    );
    assert.equal(wm.model.graph!.name, wa.model.graph!.name);
  });

  test("the blend loads in onnxruntime-node and runs on the parents' inputs; the alpha-1 copy gives the first model's output", async () => {
    const blend = (
      await blendOnnxModels({
        inputs: [
          { bytes: a, alpha: 0.5 },
          { bytes: b, alpha: 0.5 },
        ],
      })
    ).bytes!;
    const [ya, yb, ym] = await Promise.all([run(a), run(b), run(blend)]);
    assert.equal(ym.length, ya.length);
    assert.ok(ym.every(Number.isFinite));
    assert.notDeepEqual(ym, ya);
    assert.notDeepEqual(ym, yb);
    const copy = (
      await blendOnnxModels({
        inputs: [
          { bytes: a, alpha: 1 },
          { bytes: b, alpha: 0 },
        ],
      })
    ).bytes!;
    assert.deepEqual(await run(copy), ya);
  });

  test("three and four models: a weighted sum with the given shares", async () => {
    const c = makeSyntheticVoice({ seed: 3, metadata: meta });
    const d = makeSyntheticVoice({ seed: 4, metadata: meta });
    const alphas = [0.1, 0.2, 0.3, 0.4];
    const result = await blendOnnxModels({ inputs: [a, b, c, d].map((bytes, i) => ({ bytes, alpha: alphas[i]! })) });
    const parents = [a, b, c, d].map((m) => weights(m).weights.get("spk_proj.weight")!.values);
    const blended = weights(result.bytes!).weights.get("spk_proj.weight")!.values;
    for (let i = 0; i < blended.length; i += 97) {
      const expected = Math.fround(alphas.reduce((s, al, k) => s + al * parents[k]![i]!, 0));
      assert.equal(blended[i], expected);
    }
  });

  test("RVC speaker tables with different row counts are cut to the smallest; the result runs", async () => {
    const many = makeSyntheticVoice({ seed: 5, speakers: 109, metadata: meta });
    const one = makeSyntheticVoice({ seed: 6, speakers: 1, metadata: meta });
    const result = await blendOnnxModels({
      inputs: [
        { bytes: many, alpha: 0.3 },
        { bytes: one, alpha: 0.7 },
      ],
    });
    assert.deepEqual(result.truncated, [{ name: "emb_g.weight", rows: 1 }]);
    const table = weights(result.bytes!).weights.get("emb_g.weight")!;
    assert.deepEqual(table.dims, [1, 256]);
    const x = weights(many).weights.get("emb_g.weight")!.values;
    const y = weights(one).weights.get("emb_g.weight")!.values;
    assert.equal(table.values[255], Math.fround(0.3 * x[255]! + 0.7 * y[255]!));
    assert.equal((await run(result.bytes!)).length, 20);
    // A model with alpha 0 does not cut the table.
    const kept = await blendOnnxModels({
      inputs: [
        { bytes: many, alpha: 1 },
        { bytes: one, alpha: 0 },
      ],
    });
    assert.ok(kept.bytes!.equals(Buffer.from(many)));
  });

  test("incompatible models are refused with a reason naming them", async () => {
    const cases: Array<[Uint8Array, RegExp]> = [
      [
        makeSyntheticVoice({ seed: 7, metadata: { ...meta, architecture: "native" } }),
        /voice model 8 has architecture native but voice model 7 has rvc/,
      ],
      [makeSyntheticVoice({ seed: 7, metadata: { ...meta, sample_rate: "48000" } }), /sample_rate 48000 .* 40000/],
      [
        makeSyntheticVoice({ seed: 7, metadata: meta, reshape: { name: "enc_p.emb_phone.weight", dims: [256, 192] } }),
        /enc_p\.emb_phone\.weight has shape \[256, 192\] in voice model 8 but \[768, 192\] in voice model 7/,
      ],
      [
        makeSyntheticVoice({ seed: 7, metadata: meta, audioShape: [1, -1, 1] }),
        /audio_shape \(int64\) differs between voice model 8 and voice model 7/,
      ],
      [
        makeSyntheticVoice({ seed: 7, metadata: meta, fillBytes: 1 }),
        /voice model 8 and voice model 7 have different weights; voice model 8 has enc_p\.encoder/,
      ],
      [
        makeSyntheticVoice({ seed: 7, metadata: meta, reshape: { name: "emb_g.weight", dims: [4, 128] } }),
        /emb_g\.weight has shape \[4, 128\]/,
      ],
    ];
    for (const [other, message] of cases) {
      await assert.rejects(
        blendOnnxModels({
          inputs: [
            { bytes: a, alpha: 0.5, label: "voice model 7" },
            { bytes: other, alpha: 0.5, label: "voice model 8" },
          ],
        }),
        (err: Error) => err instanceof IncompatibleModelsError && message.test(err.message),
      );
    }
  });

  test("a file that is not ONNX, or missing, is an InvalidModelError; bad alphas are a RangeError", async () => {
    await assert.rejects(
      blendOnnxModels({
        inputs: [
          { bytes: a, alpha: 0.5 },
          { bytes: Buffer.from("RIFF....WAVEfmt not a model at all"), alpha: 0.5 },
        ],
      }),
      InvalidModelError,
    );
    await assert.rejects(
      blendOnnxModels({
        inputs: [
          { bytes: a, alpha: 0.5 },
          { path: join(dir, "nope.onnx"), alpha: 0.5 },
        ],
      }),
      /file .*nope\.onnx does not exist/,
    );
    await assert.rejects(
      blendOnnxModels({
        inputs: [
          { bytes: a, alpha: Number.NaN },
          { bytes: b, alpha: 0.5 },
        ],
      }),
      RangeError,
    );
  });
});
