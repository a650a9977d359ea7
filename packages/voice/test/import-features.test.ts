import assert from "node:assert/strict";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { importContentVec } from "../src/import/contentvec-import.ts";
import { writeContentVecSignatureModel } from "../src/rvc/signature-models.ts";
import { tempDir } from "./support.ts";

const noPython = async (): Promise<string> => {
  throw new Error("an ONNX file must not need Python");
};

describe("voices import-features: installing the ContentVec models RVC models take", () => {
  it("installs an ONNX as the form its output width says (768: v2, 256: v1), without Python", async () => {
    const dir = await tempDir();
    const targets = { v2: join(dir, "models", "v2.onnx"), v1: join(dir, "models", "v1.onnx") };
    await writeFile(join(dir, "vec768.onnx"), writeContentVecSignatureModel());
    await writeFile(join(dir, "vec256.onnx"), writeContentVecSignatureModel(2, 256));
    assert.deepEqual(await importContentVec(join(dir, "vec768.onnx"), targets, { python: noPython }), {
      installed: [targets.v2],
      converted: false,
    });
    assert.deepEqual(await importContentVec(join(dir, "vec256.onnx"), targets, { python: noPython }), {
      installed: [targets.v1],
      converted: false,
    });
    assert.deepEqual(await readFile(targets.v1), await readFile(join(dir, "vec256.onnx")));
  });

  it("refuses a model of another width or kind, naming it, and leaves nothing behind", async () => {
    const dir = await tempDir();
    const targets = { v2: join(dir, "models", "v2.onnx"), v1: join(dir, "models", "v1.onnx") };
    const hubert64 = new URL("./fixtures/hubert/hubert-random-v2.onnx", import.meta.url).pathname;
    await assert.rejects(
      importContentVec(hubert64, targets, { python: noPython }),
      /gives 64-d features; RVC models take 768 \(v2\) or 256 \(v1\)/,
    );
    const rmvpe = new URL("./fixtures/rmvpe/rmvpe-random.onnx", import.meta.url).pathname;
    await assert.rejects(
      importContentVec(rmvpe, targets, { python: noPython }),
      /rmvpe-random\.onnx: not a content-feature model/,
    );
    await assert.rejects(importContentVec(join(dir, "absent.pt"), targets, { python: noPython }), /absent\.pt: no such file/);
    assert.deepEqual(await readdir(join(dir, "models")), []);
  });
});
