import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ensurePyTorch } from "@mixdown/separation/import";
import { describe, it } from "node:test";
import { importContentVec } from "../src/import/contentvec-import.ts";
import { VOICE_PYTHON_PATH } from "../src/import/python-path.ts";
import { writeContentVecSignatureModel } from "../src/rvc/signature-models.ts";
import { tempDir } from "./support.ts";

// Debian's PyTorch, as the import commands get it: installed here when missing (the test setup is root), never skipped.
const torchPython = await ensurePyTorch(() => {});
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

  it("converts a fairseq-layout checkpoint whose pickle names classes this Python lacks, and checks the widths it gives (needs python3-torch)", async () => {
    const dir = await tempDir();
    const checkpoint = join(dir, "hubert.pt");
    // The small test HuBERT, saved with its settings in an object of a module that is then gone.
    execFileSync(
      torchPython,
      [
        "-c",
        [
          "import sys, types, torch",
          "from mixdown_voice.hubert import HuBERT",
          "m = types.ModuleType('fairseq_gone'); sys.modules['fairseq_gone'] = m",
          "class Config: pass",
          "Config.__module__ = 'fairseq_gone'; m.Config = Config",
          "c = Config(); c.encoder_attention_heads = 4",
          "s = HuBERT(channels=32, width=64, hidden=128, heads=4, layers=3, pos_kernel=16, pos_groups=4, projection=16).state_dict()",
          "torch.save({'model': s, 'args': c}, sys.argv[1])",
        ].join("\n"),
        checkpoint,
      ],
      { env: { ...process.env, PYTHONPATH: VOICE_PYTHON_PATH } },
    );
    const targets = { v2: join(dir, "models", "v2.onnx"), v1: join(dir, "models", "v1.onnx") };
    await assert.rejects(
      importContentVec(checkpoint, targets, { python: async () => torchPython }),
      /hubert\.pt: its v2 features are 64-d, RVC v2 models take 768/,
    );
    assert.deepEqual(await readdir(join(dir, "models")), []);
  });
});
