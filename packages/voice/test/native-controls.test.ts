import assert from "node:assert/strict";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import {
  contourShiftSemitones,
  convertVoiceFile,
  loadVoiceEngine,
  mfccDistance,
  mfccMean,
  trackPitch,
  type VoiceEngine,
} from "../src/index.ts";
import { readMono, rmsEnvelopeDb, SENTENCE, speech, tempDir, voicesDir } from "./support.ts";

describe("native voice conversion controls", () => {
  let engine: VoiceEngine;
  let input: string;
  let target: Float32Array;
  let source: Float32Array;
  const convert = async (controls: { conversionStrength: number; modelVolumeMix: number; pitchShift: number }) => {
    const r = await convertVoiceFile({
      inputPath: input,
      engine,
      params: { ...controls, pre: {}, post: {} },
      outDir: join(await tempDir(), "out"),
    });
    return readMono(r.output);
  };
  before(async () => {
    engine = await loadVoiceEngine(join(voicesDir, "native-aria.onnx"));
    input = await speech("en+m1", SENTENCE);
    source = await readMono(input);
    target = await readMono(await speech("en+f2", "Turn the page slowly and listen to the rain falling on the roof."));
  });

  it("conversionStrength moves the timbre monotonically away from the input's (0) toward the target's (1)", async () => {
    const mt = mfccMean(target, 16000);
    const ms = mfccMean(source, 16000);
    const outs = [];
    for (const s of [0, 0.5, 1])
      outs.push(mfccMean(await convert({ conversionStrength: s, modelVolumeMix: 0, pitchShift: 0 }), 16000));
    const fromSource = outs.map((o) => mfccDistance(o, ms));
    const toTarget = outs.map((o) => mfccDistance(o, mt));
    assert.ok(fromSource[0]! < 0.05, "strength 0 keeps the input's own character");
    assert.ok(
      fromSource[0]! < fromSource[1]! && fromSource[1]! < fromSource[2]!,
      `distance from the input ${fromSource.map((d) => d.toFixed(2)).join(" < ")}`,
    );
    assert.ok(
      toTarget[1]! < toTarget[0]!,
      `halfway is closer to the target (${toTarget[1]!.toFixed(2)} < ${toTarget[0]!.toFixed(2)})`,
    );
    assert.ok(toTarget[2]! < fromSource[2]!, "at strength 1 the output is closer to the target than to the source");
  });

  for (const shift of [-7, 5, 12]) {
    it(`pitchShift ${shift} moves the f0 contour by ${shift} semitones (median over frames, within 0.3)`, async () => {
      const out = await convert({ conversionStrength: 1, modelVolumeMix: 0, pitchShift: shift });
      const moved = contourShiftSemitones(trackPitch(source, 16000, { hop: 160 }), trackPitch(out, 16000, { hop: 160 }));
      assert.ok(Math.abs(moved - shift) < 0.3, `moved ${moved.toFixed(3)} semitones`);
      assert.equal(out.length, source.length);
    });
  }

  it("modelVolumeMix 0 keeps the input's RMS envelope; 1 flattens it toward the model's level", async () => {
    // an input whose loudness swings by 18 dB every 0.8 s
    const swinging = join(await tempDir(), "swing.wav");
    const { run } = await import("./support.ts");
    await run("ffmpeg", [
      "-v",
      "error",
      "-y",
      "-i",
      input,
      "-af",
      "volume='if(lt(mod(t,1.6),0.8),1,0.125)':eval=frame",
      swinging,
    ]);
    input = swinging;
    const frame = 1600; // 100 ms at 16 kHz
    const envIn = rmsEnvelopeDb(await readMono(swinging), frame);
    const active = (env: Float64Array) => {
      const max = Math.max(...env);
      return Array.from(env)
        .map((v, i) => [v, envIn[i]!] as const)
        .filter(([, ref]) => ref > max - 35);
    };
    const spread = (pairs: ReadonlyArray<readonly [number, number]>) => {
      const v = pairs.map(([x]) => x);
      const m = v.reduce((a, b) => a + b, 0) / v.length;
      return Math.sqrt(v.reduce((a, b) => a + (b - m) ** 2, 0) / v.length);
    };
    const env0 = rmsEnvelopeDb(await convert({ conversionStrength: 1, modelVolumeMix: 0, pitchShift: 0 }), frame);
    const envHalf = rmsEnvelopeDb(await convert({ conversionStrength: 1, modelVolumeMix: 0.5, pitchShift: 0 }), frame);
    const env1 = rmsEnvelopeDb(await convert({ conversionStrength: 1, modelVolumeMix: 1, pitchShift: 0 }), frame);
    const deviation0 = active(env0).reduce((a, [o, i]) => a + Math.abs(o - i), 0) / active(env0).length;
    assert.ok(deviation0 < 2, `mix 0 follows the input's envelope (mean deviation ${deviation0.toFixed(2)} dB)`);
    const spreadIn = spread(active(envIn));
    const spread1 = spread(active(env1));
    const spreadHalf = spread(active(envHalf));
    assert.ok(
      spread1 < spreadHalf && spreadHalf < spreadIn,
      `the loudness spread narrows with the mix: ${spreadIn.toFixed(1)} > ${spreadHalf.toFixed(1)} > ${spread1.toFixed(1)} dB`,
    );
    assert.ok(
      spread1 < spreadIn * 0.7,
      `mix 1 follows the model's steady level: ${spreadIn.toFixed(1)} -> ${spread1.toFixed(1)} dB`,
    );
    input = await speech("en+m1", SENTENCE);
  });
});
