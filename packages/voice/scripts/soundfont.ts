// Renders the instrument recipe's phrases (models/voices/recipe.json, `instruments`) with a General
// MIDI soundfont: a phrase becomes a one-track MIDI file (@tonejs/midi), then fluidsynth plays it
// dry (reverb and chorus off) into a WAV. Used by build-voices.ts (the default instrument models)
// and eval-instruments.ts (their check on melodies they never saw).
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import midiPackage from "@tonejs/midi";
import { buildNativeVoiceModel } from "../src/native/build.ts";

const { Midi } = midiPackage;
const run = promisify(execFile);

/** Debian's fluid-soundfont-gm (in APT_PACKAGES). */
export const DEFAULT_SOUNDFONT = "/usr/share/sounds/sf2/FluidR3_GM.sf2";

/** One note: semitones above the instrument's root, and its length in beats; `null` is a rest. */
export type PhraseNote = [semitones: number | null, beats: number];

export interface RecipeInstrument {
  slug: string;
  title: string;
  /** General MIDI program (0-based: 40 violin, 65 alto sax, 73 flute). */
  program: number;
  /** MIDI notes the phrases' offsets count from (each phrase is played from each), inside the instrument's natural range. */
  roots: number[];
  tags: string[];
}

export interface InstrumentRecipe {
  /** Beats per minute. */
  tempo: number;
  phrases: PhraseNote[][];
  items: RecipeInstrument[];
  /** Phrases that never build an instrument model (eval-instruments.ts). */
  heldOut: { phrases: PhraseNote[][] };
}

/** A phrase from `root` as a standard MIDI file for one instrument: legato at 95 % of each note's length. */
export function phraseMidi(program: number, root: number, phrase: PhraseNote[], tempo: number): Uint8Array {
  const midi = new Midi();
  midi.header.setTempo(tempo);
  const track = midi.addTrack();
  track.instrument.number = program;
  const beat = 60 / tempo;
  let time = 0;
  for (const [semitones, beats] of phrase) {
    if (semitones !== null) track.addNote({ midi: root + semitones, time, duration: beats * beat * 0.95, velocity: 0.8 });
    time += beats * beat;
  }
  return midi.toArray();
}

/** Plays `phrase` from `root` on General MIDI `program` into `wavPath` (44.1 kHz stereo, dry). */
export async function renderPhrase(
  program: number,
  root: number,
  phrase: PhraseNote[],
  tempo: number,
  wavPath: string,
  soundfont = DEFAULT_SOUNDFONT,
): Promise<string> {
  const midiPath = wavPath.replace(/\.wav$/, ".mid");
  await writeFile(midiPath, phraseMidi(program, root, phrase, tempo));
  await run("fluidsynth", ["-ni", "-R", "0", "-C", "0", "-g", "0.8", "-r", "44100", "-F", wavPath, soundfont, midiPath]);
  return wavPath;
}

/**
 * Builds an instrument's native model: every recipe phrase played from each of its roots (files in
 * `dir`), measured as a voice's reference recordings are. Deterministic: the same recipe and
 * soundfont give the same bytes.
 */
export async function buildInstrumentModel(
  instrument: RecipeInstrument,
  recipe: Pick<InstrumentRecipe, "tempo" | "phrases">,
  dir: string,
  soundfont = DEFAULT_SOUNDFONT,
): Promise<{ onnx: Uint8Array; activeSeconds: number }> {
  const paths: string[] = [];
  for (const root of instrument.roots)
    for (const [i, phrase] of recipe.phrases.entries())
      paths.push(
        await renderPhrase(
          instrument.program,
          root,
          phrase,
          recipe.tempo,
          join(dir, `${instrument.slug}-${root}-${i}.wav`),
          soundfont,
        ),
      );
  return buildNativeVoiceModel(paths, { slug: instrument.slug, title: instrument.title });
}
