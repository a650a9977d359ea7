// `pnpm eval:harmony [--clips 12] [--examples DIR]`: how well a harmony lands on its key's notes,
// on sung-like melodies whose score is known. Two sets: a synthesised voice (a harmonic series
// through an "ah"'s formants, 20-cent vibrato, notes sung up to 15 cents off: `testing/melody.ts`)
// and FluidSynth's General MIDI "Voice Oohs" (program 53, the GM soundfont; apt: fluidsynth
// fluid-soundfont-gm), each melody in a different key, low and high voices. For each melody and
// each interval (third, sixth) and direction, the harmony's pitch track (YIN, held to the
// harmony's range) is measured: the share of voiced frames within 30 cents of a note of the key's
// scale, and of the intended diatonic note (the score's note's third or sixth). Two ways of
// shifting are measured side by side: each note rendered on its own with rubberband and
// crossfaded (what the service does), and one rubberband pass whose pitch is changed at each
// note by `asendcmd`. The key is also found by the service's way (Essentia) on each lead.
// Three example renders (lead + harmony) are written to a folder the script prints.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs, promisify } from "node:util";
import midiPackage from "@tonejs/midi";
import { decodeMono, ESSENTIA_SAMPLE_RATE, estimateKey } from "@mixdown/analysis";
import { writeFloatWav } from "@mixdown/analysis/testing";
import { probeAudio, type AudioProbe } from "@mixdown/audio";
import {
  musicalKeyName,
  parseMusicalKey,
  scalePitchClasses,
  type HarmonyDirection,
  type HarmonyInterval,
  type MusicalKey,
} from "@mixdown/jobs";
import { framesOfScore, melodyScore, rangeAround, singMelody, type ScoreNote } from "../testing/melody.ts";
import {
  diatonicTarget,
  harmonizeVocal,
  PITCH_HOP,
  PITCH_RATE,
  planHarmony,
  shareInTune,
  shiftSegments,
  sungNotes,
} from "../src/index.ts";

const run = promisify(execFile);
const { Midi } = midiPackage;
const { values } = parseArgs({
  options: { clips: { type: "string", default: "12" }, examples: { type: "string", default: ".mixdown/eval-harmony" } },
});
const CLIPS = Number(values.clips);
const SOUNDFONT = ["/usr/share/sounds/sf2/FluidR3_GM.sf2", "/usr/share/sounds/sf2/default-GM.sf2"].find((p) => existsSync(p));
const KEYS = [
  "A minor",
  "F# major",
  "Eb major",
  "C minor",
  "G major",
  "Bb minor",
  "E major",
  "D minor",
  "Ab major",
  "B minor",
  "F major",
  "C# minor",
];
const COMBOS: Array<[HarmonyInterval, HarmonyDirection]> = [
  ["third", "above"],
  ["third", "below"],
  ["sixth", "above"],
  ["sixth", "below"],
];
const HOP = PITCH_HOP / PITCH_RATE;

interface Clip {
  set: "synthetic" | "voice-oohs";
  key: MusicalKey;
  score: ScoreNote[];
  path: string;
}

async function voiceOohs(score: ScoreNote[], wav: string): Promise<void> {
  const midi = new Midi();
  const track = midi.addTrack();
  track.instrument.number = 53;
  for (const n of score) track.addNote({ midi: n.midi, time: n.start, duration: n.end - n.start, velocity: 0.8 });
  const mid = wav.replace(/\.wav$/, ".mid");
  await writeFile(mid, midi.toArray());
  await run("fluidsynth", ["-ni", "-R", "0", "-C", "0", "-g", "0.8", "-r", "44100", "-F", wav, SOUNDFONT!, mid]);
}

/** The other way: one rubberband pass over the whole vocal, its pitch changed at each segment's start by asendcmd. */
async function renderWithCommands(
  clip: Clip,
  probe: AudioProbe,
  k: MusicalKey,
  interval: HarmonyInterval,
  direction: HarmonyDirection,
  out: string,
) {
  const { notes } = await sungNotes(clip.path);
  const segments = shiftSegments(planHarmony(notes, k, interval, direction), HOP, probe.sampleRate, probe.frames);
  const commands = segments
    .map((s) => `${(s.start / probe.sampleRate).toFixed(4)} rubberband pitch ${(2 ** (s.semitones / 12)).toFixed(6)};`)
    .join("\n");
  const file = `${out}.cmd`;
  await writeFile(file, commands);
  const first = 2 ** ((segments[0]?.semitones ?? 0) / 12);
  await run("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y", "-i", clip.path],
    ...["-af", `asendcmd=f=${file},rubberband=pitch=${first.toFixed(6)}:formant=preserved`, "-ac", "2", "-c:a", "pcm_f32le", out],
  ]);
}

const sameScale = (a: MusicalKey, b: MusicalKey) => scalePitchClasses(a).sort().join() === scalePitchClasses(b).sort().join();

async function main() {
  if (!SOUNDFONT) throw new Error("no GM soundfont: apt-get install fluidsynth fluid-soundfont-gm");
  const dir = await mkdtemp(join(tmpdir(), "mixdown-eval-harmony-"));
  const examples = resolve(values.examples!);
  await mkdir(examples, { recursive: true });
  try {
    const clips: Clip[] = [];
    for (let i = 0; i < CLIPS; i++) {
      const key = parseMusicalKey(KEYS[i % KEYS.length]!)!;
      // alternately a low and a high voice, each melody its own
      const score = melodyScore(key, { centre: i % 2 ? 55 : 66, count: 16, noteSeconds: 0.4, seed: 100 + i });
      const set = i % 2 === 0 ? "synthetic" : "voice-oohs";
      const path = join(dir, `lead-${i}.wav`);
      if (set === "synthetic") await writeFloatWav(path, [singMelody(score, { seed: i + 1 })], 44100);
      else await voiceOohs(score, path);
      clips.push({ set, key, score, path });
    }
    type Row = { scale: number[]; target: number[]; seconds: number; audio: number };
    const rows = new Map<string, Row>();
    const add = (name: string, scale: number, target: number, seconds: number, audio: number) => {
      const row = rows.get(name) ?? { scale: [], target: [], seconds: 0, audio: 0 };
      row.scale.push(scale);
      row.target.push(target);
      row.seconds += seconds;
      row.audio += audio;
      rows.set(name, row);
    };
    const keysFound: string[] = [];
    let keysExact = 0;
    let keysSameScale = 0;
    let exampleCount = 0;
    for (const [i, clip] of clips.entries()) {
      const probe = (await probeAudio(clip.path))!;
      const duration = probe.frames / probe.sampleRate;
      const lead = await sungNotes(clip.path, { range: rangeAround(clip.score.map((n) => n.midi)) });
      add(
        `${clip.set}: the lead itself`,
        shareInTune(lead.f0, { key: clip.key }),
        shareInTune(lead.f0, { key: clip.key, targets: framesOfScore(clip.score, lead.f0.length, HOP, (n) => n.midi) }),
        0,
        0,
      );
      const estimate = estimateKey(await decodeMono(clip.path, { sampleRate: ESSENTIA_SAMPLE_RATE }));
      const found = estimate && parseMusicalKey(`${estimate.key} ${estimate.scale}`);
      keysFound.push(`${musicalKeyName(clip.key)} -> ${found ? musicalKeyName(found) : "none"}`);
      if (found && musicalKeyName(found) === musicalKeyName(clip.key)) keysExact++;
      // a relative key (A minor for C major) has the same notes: the harmony is the same
      if (found && sameScale(found, clip.key)) keysSameScale++;
      for (const [interval, direction] of COMBOS) {
        const targetOf = (n: ScoreNote) => diatonicTarget(n.midi, clip.key, interval, direction).target;
        const range = rangeAround(clip.score.map(targetOf));
        const measure = async (path: string) => {
          const { f0 } = await sungNotes(path, { range });
          return [
            shareInTune(f0, { key: clip.key }),
            shareInTune(f0, { key: clip.key, targets: framesOfScore(clip.score, f0.length, HOP, targetOf) }),
          ] as const;
        };
        const harmony = join(dir, `h-${i}-${interval}-${direction}.wav`);
        const mix = join(dir, `m-${i}-${interval}-${direction}.wav`);
        const started = performance.now();
        await harmonizeVocal({
          vocalPath: clip.path,
          mixWithPath: clip.path,
          probe,
          key: clip.key,
          interval,
          direction,
          harmonyTargets: [{ format: "wav", path: harmony }],
          mixTargets: [{ format: "wav", path: mix }],
        });
        const seconds = (performance.now() - started) / 1000;
        add(`${clip.set}: per note, crossfaded (the service)`, ...(await measure(harmony)), seconds, duration);
        const commanded = join(dir, `c-${i}-${interval}-${direction}.wav`);
        const t0 = performance.now();
        await renderWithCommands(clip, probe, clip.key, interval, direction, commanded);
        add(`${clip.set}: one pass, asendcmd`, ...(await measure(commanded)), (performance.now() - t0) / 1000, duration);
        // three examples to listen to: lead + harmony
        if (
          exampleCount < 3 &&
          ((i === 0 && interval === "third" && direction === "above") ||
            (i === 1 && interval === "sixth" && direction === "below") ||
            (i === 2 && interval === "third" && direction === "below"))
        ) {
          const name = `${exampleCount + 1}-${clip.set}-${musicalKeyName(clip.key).replace(/[ #]/g, (c) => (c === "#" ? "sharp" : "-"))}-${interval}-${direction}`;
          await copyFile(mix, join(examples, `${name}-with-harmony.wav`));
          await copyFile(clip.path, join(examples, `${name}-lead.wav`));
          exampleCount++;
        }
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(
      `\n${CLIPS} melodies (16 notes each), ${COMBOS.length} harmonies each; shares of voiced frames within 30 cents\n`,
    );
    console.log("| set: method | on the key's scale | on the intended note | x real time |");
    console.log("| --- | --- | --- | --- |");
    for (const [name, row] of rows)
      console.log(
        `| ${name} | ${mean(row.scale).toFixed(3)} (min ${Math.min(...row.scale).toFixed(3)}) | ${mean(row.target).toFixed(3)} (min ${Math.min(...row.target).toFixed(3)}) | ${row.seconds ? (row.audio / row.seconds).toFixed(1) : "-"} |`,
      );
    console.log(
      `\nKeys found (Essentia's KeyExtractor on the lead alone): ${keysExact}/${clips.length} exact, ${keysSameScale}/${clips.length} the same scale (the key or its relative): ${keysFound.join("; ")}`,
    );
    console.log(`\nExamples to listen to (lead, and lead with harmony): ${examples}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
