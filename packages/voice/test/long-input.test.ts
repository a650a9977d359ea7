import assert from "node:assert/strict";
import { join } from "node:path";
import { it } from "node:test";
import { convertVoiceFile, loadVoiceEngine } from "../src/index.ts";
import { run, SENTENCE, speech, tempDir, voicesDir } from "./support.ts";

it("converts a 5-minute input with a native voice in bounded memory, keeping its exact length", async () => {
  const dir = await tempDir();
  const short = await speech("en+m1", SENTENCE);
  const input = join(dir, "five-minutes.wav");
  await run("ffmpeg", ["-v", "error", "-y", "-stream_loop", "-1", "-i", short, "-t", "300", "-ar", "44100", "-ac", "2", input]);
  const engine = await loadVoiceEngine(join(voicesDir, "native-flint.onnx"));
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const started = performance.now();
  const r = await convertVoiceFile({
    inputPath: input,
    engine,
    params: { conversionStrength: 1, modelVolumeMix: 0.5, pitchShift: 0, pre: { highPassFilter: {} }, post: { compressor: {} } },
    outDir: join(dir, "out"),
  }).finally(() => clearInterval(timer));
  const seconds = (performance.now() - started) / 1000;
  assert.equal(r.frames, 300 * 44100);
  const growth = (peak - base) / 1024 / 1024;
  // The whole input as float32 would be 101 MB (stereo) / 50 MB (mono); streaming stays well under.
  assert.ok(growth < 160, `RSS grew ${growth.toFixed(0)} MB`);
  console.log(
    `native 5-minute conversion: ${seconds.toFixed(1)} s (realtime factor ${(seconds / 300).toFixed(3)}), RSS +${growth.toFixed(0)} MB`,
  );
  await engine.close();
});
