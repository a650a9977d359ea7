import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  coarsePitch,
  convertVoiceFile,
  inspectVoiceModelFile,
  loadVoiceEngine,
  medianVoiced,
  RvcVoiceEngine,
  trackPitch,
  writeContentVecSignatureModel,
  writeRvcSignatureModel,
} from "../src/index.ts";
import { readMono, run, SENTENCE, speech, tempDir } from "./support.ts";

describe("RVC v2 ONNX plumbing (signature models with random weights)", () => {
  it("quantises f0 to RVC's coarse pitch: 1 when unvoiced, 1..255 on the mel scale from 50 to 1100 Hz", () => {
    assert.deepEqual(Array.from(coarsePitch(Float32Array.of(0, 50, 1100, 5000, 220))).map(Number), [1, 1, 255, 255, 60]);
  });

  it("recognises the RVC v2 signature and rejects a near miss naming the mismatch", () => {
    assert.equal(inspectVoiceModelFile(writeRvcSignatureModel(48000)).architecture, "rvc");
    assert.throws(() => inspectVoiceModelFile(writeContentVecSignatureModel()), /unknown voice model architecture/);
    assert.throws(() => inspectVoiceModelFile(new TextEncoder().encode("not onnx")), /not an ONNX model/);
  });

  it("converts with the model's feature index (768-d, as wide as ContentVec's), and names a width mismatch and a missing ContentVec", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "rvc.onnx"), writeRvcSignatureModel(40000));
    await writeFile(join(dir, "vec.onnx"), writeContentVecSignatureModel());
    const index = (name: string) => new URL(`./fixtures/rvc-index/${name}`, import.meta.url).pathname;
    const input = await speech("en+m3", "Retrieval of the nearest features.");
    const params = { conversionStrength: 0.75, modelVolumeMix: 1, pitchShift: 0, pre: {}, post: {} };
    const load = (indexPath: string) =>
      RvcVoiceEngine.load({
        modelPath: join(dir, "rvc.onnx"),
        contentVecPath: join(dir, "vec.onnx"),
        sampleRate: 40000,
        indexPath,
      });
    const engine = await load(index("ivf-flat-768.index"));
    const r = await convertVoiceFile({ inputPath: input, engine, params, outDir: join(dir, "out") });
    const out = await readMono(r.output, 44100);
    assert.equal(out.length, r.frames);
    assert.ok(out.every(Number.isFinite) && out.some((v) => Math.abs(v) > 1e-3));
    await engine.close();
    const narrow = await load(index("ivf-flat.index"));
    await assert.rejects(
      convertVoiceFile({ inputPath: input, engine: narrow, params, outDir: join(dir, "out2") }),
      /the voice model's index holds 64-d features, the ContentVec model gives 768-d/,
    );
    await narrow.close();
    await assert.rejects(
      RvcVoiceEngine.load({ modelPath: join(dir, "rvc.onnx"), contentVecPath: join(dir, "absent.onnx"), sampleRate: 40000 }),
      /RVC models need the ContentVec model .*absent\.onnx \(VOICE_CONTENTVEC_MODEL: vec-768-layer-12\.onnx for v2 models; VOICE_CONTENTVEC_V1_MODEL: vec-256-layer-9\.onnx for v1\), which is missing: install it with `\.\/mixdown\.sh models pull hubert`/,
    );
  });

  it("converts end to end with an RMVPE model for f0, and names a missing one with what to do", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "rvc.onnx"), writeRvcSignatureModel(40000));
    await writeFile(join(dir, "vec.onnx"), writeContentVecSignatureModel());
    const options = { modelPath: join(dir, "rvc.onnx"), contentVecPath: join(dir, "vec.onnx"), sampleRate: 40000 };
    const rmvpePath = new URL("./fixtures/rmvpe/rmvpe-random.onnx", import.meta.url).pathname;
    const engine = await RvcVoiceEngine.load({ ...options, rmvpePath });
    const input = await speech("en+f2", "Pitch from the pitch model.");
    const params = { conversionStrength: 1, modelVolumeMix: 1, pitchShift: 0, pre: {}, post: {} };
    const r = await convertVoiceFile({ inputPath: input, engine, params, outDir: join(dir, "out") });
    assert.equal((await readMono(r.output, 44100)).length, r.frames);
    await engine.close();
    await assert.rejects(
      RvcVoiceEngine.load({ ...options, rmvpePath: join(dir, "absent.onnx") }),
      /RMVPE pitch model .*absent\.onnx is missing \(VOICE_RMVPE_MODEL\): install it with `\.\/mixdown\.sh models pull rmvpe` \(or `\.\/mixdown\.sh voices import-pitch rmvpe\.pt`\), or set VOICE_PITCH_METHOD=yin/,
    );
  });

  it("converts with a .pth converted by Mixdown (excitation computed outside the graph): exact length", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "vec.onnx"), writeContentVecSignatureModel());
    const modelPath = new URL("./fixtures/rvc-pth/rvc-v2-48k.onnx", import.meta.url).pathname;
    const info = inspectVoiceModelFile(await readFile(modelPath));
    assert.deepEqual([info.architecture, info.rvcGraph, info.sampleRate], ["rvc", "mixdown", 48000]);
    const engine = await RvcVoiceEngine.load({ modelPath, contentVecPath: join(dir, "vec.onnx"), sampleRate: 48000 });
    const input = await speech("en+f1", SENTENCE);
    const r = await convertVoiceFile({
      inputPath: input,
      engine,
      params: { conversionStrength: 1, modelVolumeMix: 1, pitchShift: 3, pre: {}, post: {} },
      outDir: join(dir, "out"),
    });
    const out = await readMono(r.output, 44100);
    assert.equal(out.length, r.frames);
    assert.ok(out.every(Number.isFinite) && out.some((v) => Math.abs(v) > 1e-3));
    await engine.close();
  });

  it("converts with a converted model trained without f0 (no pitch, no excitation), a v1 one taking the 256-d ContentVec of the two", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "vec256.onnx"), writeContentVecSignatureModel(1, 256));
    await writeFile(join(dir, "vec768.onnx"), writeContentVecSignatureModel());
    const modelPath = new URL("./fixtures/rvc-pth/rvc-v1-40k-nof0.onnx", import.meta.url).pathname;
    assert.equal(inspectVoiceModelFile(await readFile(modelPath)).rvcGraph, "mixdown-no-f0");
    // The v1 model's 256-d input picks the v1 ContentVec of the two installed.
    const engine = await loadVoiceEngine(modelPath, {
      sampleRate: 40000,
      contentVecPath: join(dir, "vec768.onnx"),
      contentVecV1Path: join(dir, "vec256.onnx"),
    });
    const r = await convertVoiceFile({
      inputPath: await speech("en+m2", "No pitch guidance here."),
      engine,
      params: { conversionStrength: 1, modelVolumeMix: 1, pitchShift: 0, pre: {}, post: {} },
      outDir: join(dir, "out"),
    });
    const out = await readMono(r.output, 44100);
    assert.equal(out.length, r.frames);
    assert.ok(out.every(Number.isFinite) && out.some((v) => Math.abs(v) > 1e-4));
    await engine.close();
  });

  it("names the ContentVec a converted v1 model needs when the installed one gives 768-d features", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "vec.onnx"), writeContentVecSignatureModel());
    const modelPath = new URL("./fixtures/rvc-pth/rvc-v1-40k.onnx", import.meta.url).pathname;
    const engine = await RvcVoiceEngine.load({ modelPath, contentVecPath: join(dir, "vec.onnx"), sampleRate: 40000 });
    await assert.rejects(
      convertVoiceFile({
        inputPath: await speech("en+f1", "One two."),
        engine,
        params: { conversionStrength: 1, modelVolumeMix: 1, pitchShift: 0, pre: {}, post: {} },
        outDir: join(dir, "out"),
      }),
      /takes 256-d features but the ContentVec model gives 768-d \(an RVC v1 model needs vec-256-layer-9\.onnx, VOICE_CONTENTVEC_V1_MODEL\)/,
    );
    await engine.close();
  });

  for (const rate of [40000, 48000] as const) {
    it(`converts a 50 s input in pieces cut at quiet points with a ${rate / 1000} kHz model: exact length at the input's rate, f0 shifted`, async () => {
      const dir = await tempDir();
      await writeFile(join(dir, "rvc.onnx"), writeRvcSignatureModel(rate));
      await writeFile(join(dir, "vec.onnx"), writeContentVecSignatureModel());
      const engine = await RvcVoiceEngine.load({
        modelPath: join(dir, "rvc.onnx"),
        contentVecPath: join(dir, "vec.onnx"),
        sampleRate: rate,
        segmentSeconds: 12,
      });
      const short = await speech("en+f1", SENTENCE);
      const input = join(dir, "long.wav");
      await run("ffmpeg", ["-v", "error", "-y", "-stream_loop", "-1", "-i", short, "-t", "50", "-ar", "22050", input]);
      const started = performance.now();
      const r = await convertVoiceFile({
        inputPath: input,
        engine,
        params: { conversionStrength: 1, modelVolumeMix: 1, pitchShift: 7, pre: {}, post: {} },
        outDir: join(dir, "out"),
      });
      const seconds = (performance.now() - started) / 1000;
      assert.equal(r.sampleRate, 22050);
      assert.equal(r.frames, 50 * 22050);
      const out = await readMono(r.output, 22050);
      assert.equal(out.length, 50 * 22050);
      const [f0In, f0Out] = [
        medianVoiced(trackPitch(await readMono(input), 16000, { hop: 160 })),
        medianVoiced(trackPitch(await readMono(r.output), 16000, { hop: 160 })),
      ];
      assert.ok(Math.abs(12 * Math.log2(f0Out / f0In) - 7) < 0.3, `f0 ${f0In.toFixed(1)} -> ${f0Out.toFixed(1)} Hz`);
      console.log(`RVC-signature path, ${rate} Hz model: realtime factor ${(seconds / 50).toFixed(3)}`);
      await engine.close();
    });
  }
});
