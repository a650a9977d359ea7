import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { VoiceAssets, type VoiceAssetSettings } from "../src/assets.ts";
import { tempDir } from "./support.ts";

const settings = (modelsDir: string, pitchMethod: VoiceAssetSettings["pitchMethod"]): VoiceAssetSettings => ({
  modelsDir,
  contentVec: "voices/vec-768-layer-12.onnx",
  contentVecV1: "voices/vec-256-layer-9.onnx",
  rmvpe: "voices/rmvpe.onnx",
  pitchMethod,
});
const summary = (missing: Awaited<ReturnType<VoiceAssets["missingFor"]>>) => missing.map((a) => `${a.asset}:${a.required}`);

describe("what an RVC model needs installed", () => {
  it("RMVPE is a recommendation under VOICE_PITCH_METHOD=auto, required under rmvpe, not mentioned under yin; ContentVec is always required, the 256-d form for v1", async () => {
    const dir = await tempDir();
    const v2 = { architecture: "rvc", metadata: { rvc: { version: "v2" } } };
    const v1 = { architecture: "rvc", metadata: { rvc: { version: "v1" } } };
    const unknown = { architecture: "rvc", metadata: {} };
    assert.deepEqual(summary(await new VoiceAssets(settings(dir, "auto")).missingFor(v2)), ["contentvec:true", "rmvpe:false"]);
    assert.deepEqual(summary(await new VoiceAssets(settings(dir, "rmvpe")).missingFor(v2)), ["contentvec:true", "rmvpe:true"]);
    assert.deepEqual(summary(await new VoiceAssets(settings(dir, "yin")).missingFor(v1)), ["contentvec-v1:true"]);
    assert.deepEqual(
      summary(await new VoiceAssets(settings(dir, "yin")).missingFor(unknown)),
      ["contentvec:true"],
      "v2 unless known",
    );
    assert.deepEqual(await new VoiceAssets(settings(dir, "rmvpe")).missingFor({ architecture: "native", metadata: {} }), []);
    const rmvpe = await new VoiceAssets(settings(dir, "rmvpe")).missingFor(v2);
    assert.match(rmvpe[1]!.message, /`\.\/mixdown\.sh models pull rmvpe`, or set VOICE_PITCH_METHOD=auto/);

    await mkdir(join(dir, "voices"));
    for (const f of ["vec-768-layer-12.onnx", "vec-256-layer-9.onnx", "rmvpe.onnx"])
      await writeFile(join(dir, "voices", f), "model");
    const fresh = new VoiceAssets(settings(dir, "rmvpe"));
    assert.deepEqual(await fresh.missingFor(v2), []);
    assert.deepEqual(await fresh.missingFor(v1), []);
  });

  it("takes absolute settings as they are and counts an empty file as missing", async () => {
    const dir = await tempDir();
    const absolute = join(dir, "elsewhere.onnx");
    await writeFile(absolute, "");
    const assets = new VoiceAssets({ ...settings("/nonexistent", "yin"), contentVec: absolute });
    assert.deepEqual(summary(await assets.missingFor({ architecture: "rvc", metadata: null })), ["contentvec:true"]);
  });
});
