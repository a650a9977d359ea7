import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import onnxProto from "onnx-proto";
import { ort } from "../src/ort.ts";
import { ModelRegistry, separateFile } from "../src/index.ts";
import { ImportProblem, quantizeInstalledModel, quantizeLinearLayersInt8 } from "../src/import/index.ts";
import { SMALL, writeTestModel } from "./support/mdx-test-models.ts";
import { OnnxGraphBuilder } from "../testing/onnx-builder.ts";
import { readStereo, snrDb, tones, withTempDir, writeStereo } from "./support/signals.ts";

const { onnx } = onnxProto;

/** Deterministic values in [-1, 1). */
function noise(count: number, seed: number): Float32Array {
  let s = seed;
  return Float32Array.from({ length: count }, () => (s = (s * 16807) % 2147483647) / 1073741823.5 - 1);
}

async function runOnce(model: Uint8Array, input: Float32Array, dims: number[]): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(model);
  try {
    const out = await session.run({ [session.inputNames[0]!]: new ort.Tensor("float32", input, dims) });
    return out[session.outputNames[0]!]!.data as Float32Array;
  } finally {
    await session.release();
  }
}

/** An MDX-Net model whose network mixes each frame's frequency bins: input · W + b over the bins. */
async function writeLinearMdxModel(dir: string, name: string): Promise<void> {
  await writeTestModel(dir, { ...SMALL, name });
  const bins = SMALL.dimF;
  const g = new OnnxGraphBuilder();
  const x = g.input("input", ["batch", 4, bins, SMALL.dimT]);
  // mostly the identity, so the separated audio stays audio, with a random part to quantise
  const weights = noise(bins * bins, 7).map((v) => 0.02 * v);
  for (let i = 0; i < bins; i++) weights[i * bins + i]! += 1;
  const y = g.node("MatMul", [g.node("Transpose", [x], { perm: [0, 1, 3, 2] }), g.floatTensor(weights, [bins, bins])]);
  const biased = g.node("Add", [
    y,
    g.floatTensor(
      noise(bins, 3).map((v) => 0.001 * v),
      [bins],
    ),
  ]);
  g.node("Transpose", [biased], { perm: [0, 1, 3, 2] }, "output");
  g.output("output", ["batch", 4, bins, SMALL.dimT]);
  await writeFile(join(dir, `${name}.onnx`), g.encode(18));
}

describe("int8 quantisation of linear layers", () => {
  it("turns a MatMul with constant weights into onnxruntime's dynamic int8 pattern, close to the float result", async () => {
    const g = new OnnxGraphBuilder();
    const x = g.input("x", [3, 64]);
    g.node("MatMul", [x, g.floatTensor(noise(64 * 96, 11), [64, 96])], {}, "y");
    g.output("y", [3, 96]);
    const float = g.encode(18);
    const { bytes, layers } = quantizeLinearLayersInt8(float);
    assert.equal(layers, 1);
    const graph = onnx.ModelProto.decode(bytes).graph!;
    const ops = graph.node!.map((n) => n.opType);
    assert.ok(!ops.includes("MatMul"), `a float MatMul is left: ${ops.join(", ")}`);
    assert.deepEqual(ops.slice(0, 2), ["DynamicQuantizeLinear", "MatMulInteger"]);
    const weights = graph.initializer!.find((t) => t.dataType === onnx.TensorProto.DataType.INT8 && (t.dims ?? []).length === 2);
    assert.ok(weights, "no int8 weights");
    assert.equal(weights.rawData!.length, 64 * 96, "the weights are stored as one byte each");
    assert.ok(bytes.length < float.length / 2, `${bytes.length} bytes against the float model's ${float.length}`);

    const input = noise(3 * 64, 5);
    const expected = await runOnce(float, input, [3, 64]);
    const actual = await runOnce(bytes, input, [3, 64]);
    const snr = snrDb(expected, actual);
    // int8 weights and activations: close, and not the float result itself
    assert.ok(snr > 30 && snr < 80, `SNR against the float model ${snr.toFixed(1)} dB`);
  });

  it("quantises a Gemm with transB and bias, and leaves small and non-constant products float", async () => {
    const g = new OnnxGraphBuilder();
    const x = g.input("x", [2, 80]);
    const h = g.node("Gemm", [x, g.floatTensor(noise(120 * 80, 13), [120, 80]), g.floatTensor(noise(120, 17), [120])], {
      transB: 1,
    });
    // a small weight (under 4096 values) and a product of two activations stay float
    const small = g.node("MatMul", [h, g.floatTensor(noise(120 * 8, 19), [120, 8])]);
    g.node("MatMul", [small, g.node("Transpose", [small])], {}, "y");
    g.output("y", [2, 2]);
    const float = g.encode(18);
    const { bytes, layers } = quantizeLinearLayersInt8(float);
    assert.equal(layers, 1);
    const ops = onnx.ModelProto.decode(bytes).graph!.node!.map((n) => n.opType);
    assert.equal(ops.filter((op) => op === "MatMul").length, 2);
    assert.ok(!ops.includes("Gemm"));
    const input = noise(2 * 80, 23);
    const snr = snrDb(await runOnce(float, input, [2, 80]), await runOnce(bytes, input, [2, 80]));
    assert.ok(snr > 25 && snr < 80, `SNR against the float model ${snr.toFixed(1)} dB`);
  });

  it("installs NAME-int8 beside an installed model, which loads and separates close to the float model", async () => {
    await withTempDir(async (dir) => {
      await writeLinearMdxModel(dir, "linear");
      const q = await quantizeInstalledModel(dir, "linear");
      assert.equal(q.name, "linear-int8");
      assert.equal(q.layers, 1);
      const manifest = JSON.parse(await readFile(q.manifestPath, "utf8"));
      const original = JSON.parse(await readFile(join(dir, "linear.json"), "utf8"));
      assert.deepEqual(manifest, { ...original, name: "linear-int8", file: "linear-int8.onnx" });

      const input = join(dir, "in.wav");
      const frames = SMALL.sampleRate * 2;
      const left = tones(frames, SMALL.sampleRate, [
        { freq: 220, amp: 0.3 },
        { freq: 1250, amp: 0.2 },
      ]);
      const right = tones(frames, SMALL.sampleRate, [
        { freq: 330, amp: 0.3 },
        { freq: 700, amp: 0.2 },
      ]);
      await writeStereo(input, { left, right }, SMALL.sampleRate);
      const registry = new ModelRegistry({ modelsDir: dir });
      try {
        for (const name of ["linear", "linear-int8"])
          await separateFile({ inputPath: input, model: await registry.load(name), outDir: join(dir, name) });
      } finally {
        await registry.close();
      }
      const float = await readStereo(join(dir, "linear", "vocals.wav"), SMALL.sampleRate);
      const int8 = await readStereo(join(dir, "linear-int8", "vocals.wav"), SMALL.sampleRate);
      const snr = snrDb(float, int8);
      assert.ok(snr > 25 && Number.isFinite(snr), `vocals SNR against the float model ${snr.toFixed(1)} dB`);
    });
  });

  it("refuses an unknown model, a name already installed or not a name, and a model with no linear layer", async () => {
    await withTempDir(async (dir) => {
      await writeLinearMdxModel(dir, "linear");
      await writeTestModel(dir, { ...SMALL, name: "identity" });
      await assert.rejects(
        quantizeInstalledModel(dir, "missing"),
        (err: Error) => err instanceof ImportProblem && /no model named "missing"/.test(err.message),
      );
      await assert.rejects(
        quantizeInstalledModel(dir, "linear", "identity"),
        (err: Error) => err instanceof ImportProblem && /"identity" is installed already/.test(err.message),
      );
      await assert.rejects(
        quantizeInstalledModel(dir, "linear", "../outside"),
        (err: Error) => err instanceof ImportProblem && /"\.\.\/outside" is not a model name/.test(err.message),
      );
      await assert.rejects(
        quantizeInstalledModel(dir, "identity"),
        (err: Error) => err instanceof ImportProblem && /no linear layer/.test(err.message),
      );
    });
  });
});
