import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { ort } from "../src/ort.ts";
import { MdxModel, parseMdxManifest } from "../src/index.ts";
import { snrDb } from "./support/signals.ts";

const REPO_MODELS = resolve(import.meta.dirname, "../../../models");

/** A deterministic spectrogram chunk of the default models' geometry (dimF 1024, dimT 256). */
function chunk(length: number): Float32Array {
  const spec = new Float32Array(length);
  let seed = 12345;
  for (let i = 0; i < length; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    spec[i] = 0.3 * Math.sin(i * 0.001) + 0.1 * (seed / 2 ** 32 - 0.5);
  }
  return spec;
}

describe("a manifest's graphOptimization", () => {
  let dir: string;
  let manifest: Record<string, unknown>;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mixdown-graph-optimization-"));
    manifest = JSON.parse(await readFile(join(REPO_MODELS, "vocals.json"), "utf8")) as Record<string, unknown>;
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("is `extended` for the default models", async () => {
    for (const name of ["vocals", "vocalsplit", "stems"]) {
      const json: unknown = JSON.parse(await readFile(join(REPO_MODELS, `${name}.json`), "utf8"));
      assert.equal(parseMdxManifest(json, `${name}.json`).graphOptimization, "extended", name);
    }
  });

  it("is the level the model's session runs at: the same output as onnxruntime's own session at that level, and `all` (the default) gives another to within 110 dB", async () => {
    const onnx = join(REPO_MODELS, "vocals.onnx");
    const { dimF, dimT } = parseMdxManifest(manifest, "vocals.json");
    const dims = [1, 4, dimF, dimT];
    const spec = chunk(4 * dimF * dimT);
    const outputs: Record<string, Float32Array> = {};
    for (const level of ["extended", "all"] as const) {
      const session = await ort.InferenceSession.create(onnx, { graphOptimizationLevel: level, intraOpNumThreads: 2 });
      const result = await session.run({ [session.inputNames[0]]: new ort.Tensor("float32", spec, dims) });
      outputs[level] = (result[session.outputNames[0]].data as Float32Array).slice();
      await session.release();
    }
    assert.ok(
      outputs.all.some((v, i) => v !== outputs.extended[i]),
      "the two levels compute differently",
    );
    const snr = snrDb(outputs.all, outputs.extended);
    assert.ok(snr > 110, `all against extended: ${snr.toFixed(1)} dB`);

    const { graphOptimization: _, ...withoutLevel } = manifest;
    for (const [file, json, level] of [
      ["extended.json", manifest, "extended"],
      ["default.json", withoutLevel, "all"],
    ] as const) {
      await writeFile(join(dir, file), JSON.stringify({ ...json, file: onnx }));
      const model = await MdxModel.fromManifestFile(join(dir, file), { intraOpThreads: 2 });
      try {
        const { data } = await model.run(spec, 1);
        assert.deepEqual(data, outputs[level], `${file} runs at ${level}`);
      } finally {
        await model.release();
      }
    }
  });
});
