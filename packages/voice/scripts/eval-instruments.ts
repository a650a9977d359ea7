// Checks the default instrument models on performances they never saw: sung and hummed inputs of
// the recipe's held-out melody go through each instrument model, and the output's timbre (mean
// MFCC c1..c12) is compared with each instrument playing the other held-out melody. An output
// passes when the instrument nearest to it is the model's own, and it is nearer to that
// instrument than the input was. The pitch is moved by whole octaves toward the instrument's range
// (the input's median f0 to the nearest octave of the instrument's, at most EVAL_MAX_SHIFT
// semitones, 12 by default), as a person converting a male voice to a flute would.
//   ./mixdown.sh eval:instruments            (EVAL_MAX_SHIFT=24 allows two octaves)
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  convertVoiceFile,
  loadVoiceEngine,
  medianVoiced,
  mfccDistance,
  mfccMean,
  readVoiceCatalogue,
  trackPitch,
} from "../src/index.ts";
import { modelsDir, readMono16k } from "./eval-support.ts";
import { renderPhrase, type InstrumentRecipe, type PhraseNote } from "./soundfont.ts";

const run = promisify(execFile);
const recipe = JSON.parse(await readFile(join(modelsDir, "voices", "recipe.json"), "utf8")) as {
  speed: number;
  heldOut: { voices: string[] };
  instruments: InstrumentRecipe;
};
const { tempo, items, heldOut } = recipe.instruments;
const [inputPhrase, targetPhrase] = heldOut.phrases as [PhraseNote[], PhraseNote[]];
const maxShift = Number(process.env.EVAL_MAX_SHIFT ?? 12);

/** A hum of `phrase` (sox: a sawtooth per note through a nasal "mm" filter, with a short fade), at `rootHz`. */
async function hum(phrase: PhraseNote[], rootHz: number, path: string): Promise<string> {
  const beat = 60 / tempo;
  const notes = phrase.flatMap(([semitones, beats], i) => [
    ...(i === 0 ? [] : [":"]),
    "synth",
    (beats * beat).toFixed(3),
    semitones === null ? "sine" : "sawtooth",
    semitones === null ? "0" : (rootHz * 2 ** (semitones / 12)).toFixed(2),
    ...(semitones === null ? ["vol", "0"] : ["fade", "q", "0.04", (beats * beat).toFixed(3), "0.06"]),
  ]);
  const raw = `${path}.raw.wav`;
  await run("sox", ["-n", "-r", "44100", "-c", "1", raw, ...notes]);
  await run("sox", [raw, path, "lowpass", "900", "lowpass", "900", "equalizer", "250", "1q", "+6", "norm", "-3"]);
  return path;
}

/** A sung "la" per note (espeak-ng SSML, each syllable at its note's pitch), in `voice`. */
async function sing(phrase: PhraseNote[], voice: string, rootHz: number, path: string): Promise<string> {
  const beat = 60 / tempo;
  const ssml = phrase
    .map(([semitones, beats]) =>
      semitones === null
        ? `<break time="${Math.round(beats * beat * 1000)}ms"/>`
        : `<prosody pitch="${(rootHz * 2 ** (semitones / 12)).toFixed(1)}Hz" range="x-low" rate="${Math.round(60 / (beats * beat))}%">la</prosody>`,
    )
    .join(" ");
  await run("espeak-ng", ["-m", "-v", voice, "-s", String(recipe.speed), "-w", path, `<speak>${ssml}</speak>`]);
  return path;
}

const mfcc = async (path: string) => mfccMean(await readMono16k(path), 16000);
const medianF0 = async (path: string) => medianVoiced(trackPitch(await readMono16k(path), 16000, { hop: 160 }));

const dir = await mkdtemp(join(tmpdir(), "mixdown-eval-instruments-"));
try {
  const catalogue = (await readVoiceCatalogue(modelsDir)).filter((v) => v.instrument);
  // Each instrument playing the melody the inputs do not sing, in the register of the output it is
  // compared with (pitch moves the mean MFCC too): what "sounds like a violin" is measured against.
  const notes = targetPhrase.flatMap(([n]) => (n === null ? [] : [n])).sort((a, b) => a - b);
  const phraseMedian = notes[Math.floor(notes.length / 2)]!;
  const references = new Map<number, Map<string, Float64Array>>();
  async function referencesAt(f0: number): Promise<Map<string, Float64Array>> {
    const root = Math.round(69 + 12 * Math.log2(f0 / 440)) - phraseMedian;
    let found = references.get(root);
    if (!found) {
      found = new Map();
      for (const instrument of items) {
        const path = join(dir, `target-${instrument.slug}-${root}.wav`);
        found.set(instrument.slug, await mfcc(await renderPhrase(instrument.program, root, targetPhrase, tempo, path)));
      }
      references.set(root, found);
    }
    return found;
  }
  // The register each instrument model's shift aims at: its own instrument playing the held-out melody.
  const homeF0 = new Map<string, number>();
  for (const instrument of items)
    homeF0.set(
      instrument.slug,
      await medianF0(
        await renderPhrase(
          instrument.program,
          Math.max(...instrument.roots),
          targetPhrase,
          tempo,
          join(dir, `home-${instrument.slug}.wav`),
        ),
      ),
    );
  const inputs = [
    { name: "hum, male (A2)", path: await hum(inputPhrase, 110, join(dir, "hum-male.wav")) },
    { name: "hum, female (A3)", path: await hum(inputPhrase, 220, join(dir, "hum-female.wav")) },
    ...(await Promise.all(
      recipe.heldOut.voices.map(async (voice) => ({
        name: `sung "la", espeak-ng ${voice}`,
        path: await sing(inputPhrase, voice, voice.includes("+f") ? 220 : 120, join(dir, `sung-${voice}.wav`)),
      })),
    )),
  ].map(async (input) => ({ ...input, f0: await medianF0(input.path), timbre: await mfcc(input.path) }));
  const measured = await Promise.all(inputs);
  const header = [
    "model",
    "input",
    "shift (output f0)",
    "in→own",
    "out→own",
    "out→violin",
    "out→alto sax",
    "out→flute",
    "nearest",
    "pass",
  ];
  const rows: string[][] = [];
  let pass = 0;
  for (const model of catalogue) {
    const engine = await loadVoiceEngine(join(modelsDir, model.file));
    for (const input of measured) {
      const octaves = 12 * Math.round(Math.log2(homeF0.get(model.slug)! / input.f0));
      const shift = Math.max(-maxShift, Math.min(maxShift, octaves));
      const result = await convertVoiceFile({
        inputPath: input.path,
        engine,
        params: { conversionStrength: 1, modelVolumeMix: 0, pitchShift: shift, pre: {}, post: {} },
        outDir: join(dir, `out-${model.slug}-${rows.length}`),
      });
      const out = await mfcc(result.output);
      const outF0 = await medianF0(result.output);
      const atOutput = await referencesAt(outF0);
      const distances = items.map((i) => mfccDistance(out, atOutput.get(i.slug)!));
      const nearest = items[distances.indexOf(Math.min(...distances))]!;
      // The input against its own instrument in the input's register.
      const inOwn = mfccDistance(input.timbre, (await referencesAt(input.f0)).get(model.slug)!);
      const outOwn = distances[items.indexOf(items.find((i) => i.slug === model.slug)!)]!;
      const ok = nearest.slug === model.slug && outOwn < inOwn;
      pass += ok ? 1 : 0;
      rows.push([
        model.title,
        input.name,
        `${shift} (${outF0.toFixed(0)} Hz)`,
        inOwn.toFixed(2),
        outOwn.toFixed(2),
        ...distances.map((d) => d.toFixed(2)),
        nearest.title,
        ok ? "yes" : "NO",
      ]);
    }
    await engine.close();
  }
  console.log(`| ${header.join(" | ")} |\n|${header.map(() => "---").join("|")}|`);
  for (const r of rows) console.log(`| ${r.join(" | ")} |`);
  console.log(
    `\n${pass}/${rows.length} outputs nearest to their own instrument (mean MFCC c1..c12 against each instrument playing a held-out melody) and nearer to it than their input`,
  );
  if (pass < rows.length) process.exitCode = 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
