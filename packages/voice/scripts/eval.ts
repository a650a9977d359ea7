// Measures the default native voices on held-out espeak-ng speech (voices and texts that never
// built a default voice): does a conversion bring the mean MFCC (c1..c12) closer to the target
// voice than to the source, with the melody kept (median f0 = input × 2^(shift/12))?
// Also prints realtime factors for the native path and the RVC-signature path.
//   pnpm eval:voice
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  convertVoiceFile,
  loadVoiceEngine,
  contourShiftSemitones,
  medianVoiced,
  mfccDistance,
  mfccMean,
  readVoiceCatalogue,
  RvcVoiceEngine,
  trackPitch,
  writeContentVecSignatureModel,
  writeRvcSignatureModel,
} from "../src/index.ts";
import { heldOutGenders as genders, modelsDir, readMono16k as read, readRecipe, speak as speakIn } from "./eval-support.ts";

const run = promisify(execFile);
const recipe = await readRecipe();

const dir = await mkdtemp(join(tmpdir(), "mixdown-eval-voice-"));
const speak = (voice: string, text: string, name: string) => speakIn(dir, recipe.speed, voice, text, name);

try {
  const [sourceText, targetText] = recipe.heldOut.texts as [string, string];
  const catalogue = (await readVoiceCatalogue(modelsDir)).filter((v) => !v.instrument);
  const rows: string[][] = [];
  let pass = 0;
  let timbre = 0;
  let total = 0;
  let audioSeconds = 0;
  let workSeconds = 0;
  for (const voice of catalogue) {
    const engine = await loadVoiceEngine(join(modelsDir, voice.file));
    // The target voice as heard in speech the model never saw.
    const target = mfccMean(await read(await speak(voice.espeak!, targetText, `${voice.slug}-target`)), 16000);
    for (const source of recipe.heldOut.voices) {
      const input = await speak(source, sourceText, `${source}-source`);
      const shift = genders[source] === voice.gender ? 0 : voice.gender === "female" ? 5 : -5;
      const started = performance.now();
      const result = await convertVoiceFile({
        inputPath: input,
        engine,
        params: { conversionStrength: 1, modelVolumeMix: 0, pitchShift: shift, pre: {}, post: {} },
        outDir: join(dir, "out"),
      });
      workSeconds += (performance.now() - started) / 1000;
      audioSeconds += result.frames / 22050;
      const [inPcm, outPcm] = [await read(input), await read(result.output)];
      const src = mfccMean(inPcm, 16000);
      const out = mfccMean(outPcm, 16000);
      const dTarget = mfccDistance(out, target);
      const dSource = mfccDistance(out, src);
      const [f0In, f0Out] = [trackPitch(inPcm, 16000, { hop: 160 }), trackPitch(outPcm, 16000, { hop: 160 })];
      const moved = contourShiftSemitones(f0In, f0Out);
      const medians = 12 * Math.log2(medianVoiced(f0Out) / medianVoiced(f0In));
      const ok = dTarget < dSource && Math.abs(moved - shift) < 0.3;
      timbre += dTarget < dSource ? 1 : 0;
      pass += ok ? 1 : 0;
      total++;
      rows.push([
        voice.slug,
        source,
        mfccDistance(src, target).toFixed(2),
        dTarget.toFixed(2),
        dSource.toFixed(2),
        String(shift),
        moved.toFixed(2),
        medians.toFixed(2),
        ok ? "yes" : "NO",
      ]);
    }
    await engine.close();
  }
  const header = [
    "voice",
    "source (held out)",
    "src→tgt",
    "out→tgt",
    "out→src",
    "shift",
    "f0 contour moved",
    "median f0 moved",
    "pass",
  ];
  console.log(`| ${header.join(" | ")} |\n|${header.map(() => "---").join("|")}|`);
  for (const r of rows) console.log(`| ${r.join(" | ")} |`);
  console.log(`\n${timbre}/${total} outputs closer to the target voice than to the source (mean MFCC c1..c12 distance)`);
  console.log(
    `${pass}/${total} conversions closer to the target than to the source with the f0 contour within 0.3 semitones of the shift`,
  );
  console.log(
    `native realtime factor: ${(workSeconds / audioSeconds).toFixed(3)} (${workSeconds.toFixed(1)} s for ${audioSeconds.toFixed(1)} s of audio, short files: includes ffmpeg start-up)`,
  );

  // Native and RVC-signature realtime factor on a 60 s input.
  const long = join(dir, "long.wav");
  await run("ffmpeg", [
    "-v",
    "error",
    "-y",
    "-stream_loop",
    "-1",
    "-i",
    await speak("en+m1", sourceText, "loop"),
    "-t",
    "60",
    "-ar",
    "44100",
    long,
  ]);
  const native = await loadVoiceEngine(join(modelsDir, catalogue[0]!.file));
  let t = performance.now();
  await convertVoiceFile({
    inputPath: long,
    engine: native,
    params: { conversionStrength: 1, modelVolumeMix: 0.5, pitchShift: 3, pre: {}, post: {} },
    outDir: join(dir, "long-native"),
  });
  console.log(`native, 60 s input with pitchShift 3: realtime factor ${((performance.now() - t) / 60000).toFixed(3)}`);
  await writeFile(join(dir, "rvc.onnx"), writeRvcSignatureModel(40000));
  await writeFile(join(dir, "vec.onnx"), writeContentVecSignatureModel());
  const rvc = await RvcVoiceEngine.load({
    modelPath: join(dir, "rvc.onnx"),
    contentVecPath: join(dir, "vec.onnx"),
    sampleRate: 40000,
  });
  t = performance.now();
  await convertVoiceFile({
    inputPath: long,
    engine: rvc,
    params: { conversionStrength: 1, modelVolumeMix: 0.5, pitchShift: 3, pre: {}, post: {} },
    outDir: join(dir, "long-rvc"),
  });
  console.log(
    `RVC-signature path (tiny random model: the figure is the pipeline's own cost, YIN + pieces + resampling, without a real network), 60 s input: realtime factor ${((performance.now() - t) / 60000).toFixed(3)}`,
  );
  if (pass < total) process.exitCode = 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
