import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ensurePyTorch } from "@mixdown/separation/import";
import { describe, it } from "node:test";
import { VOICE_PYTHON_PATH } from "../src/import/python-path.ts";
import { importRmvpe, PitchImportError } from "../src/import/rmvpe-import.ts";
import { RmvpePitch } from "../src/pitch/rmvpe.ts";
import { writeContentVecSignatureModel } from "../src/rvc/signature-models.ts";
import { tempDir } from "./support.ts";

const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url).pathname;
const noPython = async (): Promise<string> => {
  throw new Error("an ONNX file must not need Python");
};
// Debian's PyTorch, as the import commands get it: installed here when missing (the test setup is root), never skipped.
const torchPython = await ensurePyTorch(() => {});

describe("voices import-pitch: installing an RMVPE model", () => {
  it("installs an rmvpe.onnx after running it, without Python", async () => {
    const dir = await tempDir();
    const target = join(dir, "models", "voices", "rmvpe.onnx");
    assert.deepEqual(await importRmvpe(fixture("rmvpe/rmvpe-random.onnx"), target, { python: noPython }), { converted: false });
    assert.deepEqual(await readFile(target), await readFile(fixture("rmvpe/rmvpe-random.onnx")));
  });

  it("refuses a file that is not an RMVPE model, naming it, and leaves nothing behind", async () => {
    const dir = await tempDir();
    const target = join(dir, "voices", "rmvpe.onnx");
    await assert.rejects(
      importRmvpe(fixture("rvc-index/flat-l2.index"), target, { python: noPython }),
      (err: Error) => err instanceof PitchImportError && /flat-l2\.index: the file is not an RMVPE model/.test(err.message),
    );
    // An ONNX model of another shape loads but gives the wrong output: refused too.
    const vec = join(dir, "vec.onnx");
    await writeFile(vec, writeContentVecSignatureModel());
    await assert.rejects(importRmvpe(vec, target, { python: noPython }), /vec\.onnx: the file is not an RMVPE model/);
    await assert.rejects(importRmvpe(join(dir, "absent.pt"), target, { python: noPython }), /absent\.pt: no such file/);
    assert.deepEqual(await readdir(join(dir, "voices")), []);
  });

  it("converts an rmvpe.pt state dict with Mixdown's own implementation (needs Debian's python3-torch)", async () => {
    const dir = await tempDir();
    const pt = join(dir, "rmvpe.pt");
    execFileSync(
      torchPython,
      [
        "-c",
        "import sys, torch; from mixdown_voice.rmvpe import RMVPE; torch.manual_seed(1); " +
          "torch.save(RMVPE(base=2, stages=5, middle=1, blocks=1).state_dict(), sys.argv[1])",
        pt,
      ],
      { env: { ...process.env, PYTHONPATH: VOICE_PYTHON_PATH } },
    );
    const target = join(dir, "voices", "rmvpe.onnx");
    assert.deepEqual(await importRmvpe(pt, target, { python: async () => torchPython }), { converted: true });
    const pitch = await RmvpePitch.load(target);
    const f0 = await pitch.track(new Float32Array(16000).map((_, i) => Math.sin((2 * Math.PI * 220 * i) / 16000)));
    assert.equal(f0.length, 101);
    await pitch.close();
    const broken = join(dir, "broken.pt");
    execFileSync(torchPython, ["-c", "import sys, torch; torch.save({'a': torch.zeros(2)}, sys.argv[1])", broken]);
    await assert.rejects(
      importRmvpe(broken, join(dir, "other", "rmvpe.onnx"), { python: async () => torchPython }),
      /broken\.pt: not an RMVPE checkpoint: it has no unet\.encoder\.layers\.0\.conv\.0\.conv\.0\.weight/,
    );
  });
});
