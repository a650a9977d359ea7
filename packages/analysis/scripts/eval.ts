// `pnpm eval:analysis [--seconds 15] [--clips 48]`: key and tempo accuracy of the audio analysis on
// a labelled set it renders itself: MIDI pieces of known key and tempo (the 24 keys, each once
// with drums and once without, tempos spread over 60-180 BPM) played by FluidSynth through the GM
// soundfont (apt: fluidsynth fluid-soundfont-gm). Key: exact and MIREX-weighted (fifth 0.5,
// relative 0.3, parallel 0.2); tempo: within 4 %, octave errors (x2, x1/2, x3, x1/3) counted.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { promisify } from "node:util";
import { analyzeAudioFile, essentiaVersion } from "../src/index.ts";

const run = promisify(execFile);
const { values } = parseArgs({
  options: { seconds: { type: "string", default: "15" }, clips: { type: "string", default: "48" } },
});
const SECONDS = Number(values.seconds);
const CLIPS = Math.min(48, Number(values.clips));
const SOUNDFONT = ["/usr/share/sounds/sf2/FluidR3_GM.sf2", "/usr/share/sounds/sf2/default-GM.sf2"].find((p) => existsSync(p));
const NAMES = ["C", "C#", "D", "Eb", "E", "F", "F#", "G", "Ab", "A", "Bb", "B"];

interface Clip {
  tonic: number;
  minor: boolean;
  bpm: number;
  drums: boolean;
}

/** A variable-length quantity, as MIDI spells delta times. */
function vlq(n: number): number[] {
  const bytes = [n & 0x7f];
  while ((n >>= 7) > 0) bytes.unshift((n & 0x7f) | 0x80);
  return bytes;
}

/** A format-0 MIDI file of the clip: piano chords on every beat, a bass line, a melody, and (drums) a rock beat. */
function midiOf(clip: Clip, seconds: number): Buffer {
  const tpq = 480;
  const beats = Math.ceil((seconds * clip.bpm) / 60);
  const events: Array<{ tick: number; bytes: number[] }> = [];
  const note = (tick: number, length: number, channel: number, key: number, velocity: number) => {
    events.push({ tick, bytes: [0x90 | channel, key, velocity] });
    events.push({ tick: tick + length, bytes: [0x80 | channel, key, 0] });
  };
  const us = Math.round(60_000_000 / clip.bpm);
  events.push({ tick: 0, bytes: [0xff, 0x51, 0x03, (us >> 16) & 0xff, (us >> 8) & 0xff, us & 0xff] });
  events.push({ tick: 0, bytes: [0xc0, 0] }, { tick: 0, bytes: [0xc1, 33] }, { tick: 0, bytes: [0xc2, 73] });
  const scale = clip.minor ? [0, 2, 3, 5, 7, 8, 11] : [0, 2, 4, 5, 7, 9, 11];
  const triad = (degree: number) => [0, 2, 4].map((s) => scale[(degree + s) % 7]! + 12 * Math.floor((degree + s) / 7));
  const progression = [0, 3, 4, 0, 5, 3, 4, 0]; // I IV V I vi IV V I (minor: i iv V i VI iv V i)
  const root = 60 + clip.tonic - (clip.tonic > 5 ? 12 : 0);
  for (let beat = 0; beat < beats; beat++) {
    const tick = beat * tpq;
    const chord = triad(progression[Math.floor(beat / 4) % progression.length]!);
    for (const step of chord) note(tick, tpq - 40, 0, root + step, beat % 4 === 0 ? 84 : 64);
    if (beat % 2 === 0) note(tick, tpq * 2 - 40, 1, root - 24 + chord[0]!, 90);
    // a melody walking the scale, two notes a beat
    for (let half = 0; half < 2; half++) {
      const degree = [0, 2, 4, 2, 1, 3, 4, 6][(beat * 2 + half) % 8]! + Math.floor(beat / 8);
      note(tick + half * (tpq / 2), tpq / 2 - 20, 2, root + 12 + scale[degree % 7]! + (degree % 14 >= 7 ? 12 : 0), 70);
    }
    if (clip.drums) {
      note(tick, 60, 9, beat % 2 === 0 ? 36 : 38, 100);
      for (let eighth = 0; eighth < 2; eighth++) note(tick + eighth * (tpq / 2), 40, 9, 42, 70);
    }
  }
  events.sort((a, b) => a.tick - b.tick || (a.bytes[0]! & 0xf0) - (b.bytes[0]! & 0xf0));
  const track: number[] = [];
  let last = 0;
  for (const e of events) {
    track.push(...vlq(e.tick - last), ...e.bytes);
    last = e.tick;
  }
  track.push(0, 0xff, 0x2f, 0);
  const header = [0x4d, 0x54, 0x68, 0x64, 0, 0, 0, 6, 0, 0, 0, 1, (tpq >> 8) & 0xff, tpq & 0xff];
  const length = track.length;
  return Buffer.from([
    ...header,
    0x4d,
    0x54,
    0x72,
    0x6b,
    (length >> 24) & 0xff,
    (length >> 16) & 0xff,
    (length >> 8) & 0xff,
    length & 0xff,
    ...track,
  ]);
}

/** MIREX's key score: 1 exact, 0.5 a fifth away (same mode), 0.3 relative, 0.2 parallel, else 0. */
function mirexScore(truth: Clip, key: string, scale: string): number {
  const tonic = NAMES.indexOf(key);
  const minor = scale === "minor";
  if (tonic === truth.tonic && minor === truth.minor) return 1;
  if (minor === truth.minor && ((tonic - truth.tonic + 12) % 12 === 7 || (truth.tonic - tonic + 12) % 12 === 7)) return 0.5;
  if (!truth.minor && minor && tonic === (truth.tonic + 9) % 12) return 0.3;
  if (truth.minor && !minor && tonic === (truth.tonic + 3) % 12) return 0.3;
  if (tonic === truth.tonic) return 0.2;
  return 0;
}

const within4 = (bpm: number, target: number) => Math.abs(bpm / target - 1) <= 0.04;

async function main() {
  if (!SOUNDFONT) throw new Error("no GM soundfont: apt-get install fluidsynth fluid-soundfont-gm");
  const clips: Clip[] = [];
  for (let i = 0; i < CLIPS; i++) {
    const tonic = i % 12;
    const minor = Math.floor(i / 12) % 2 === 1;
    const drums = i >= 24;
    clips.push({ tonic, minor, drums, bpm: Math.round(60 + (120 * ((i * 29) % 48)) / 47) });
  }
  const dir = await mkdtemp(join(tmpdir(), "mixdown-eval-analysis-"));
  const started = Date.now();
  let exact = 0;
  let mirex = 0;
  let tempoOk = 0;
  let octave = 0;
  const rows: string[] = [];
  try {
    for (const [i, clip] of clips.entries()) {
      const mid = join(dir, `${i}.mid`);
      const wav = join(dir, `${i}.wav`);
      await writeFile(mid, midiOf(clip, SECONDS));
      await run("fluidsynth", ["-ni", "-q", "-F", wav, "-r", "44100", "-T", "wav", SOUNDFONT, mid]);
      const trimmed = join(dir, `${i}-cut.wav`);
      await run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-i", wav, "-t", String(SECONDS), trimmed]);
      const a = await analyzeAudioFile(trimmed);
      const score = a.key ? mirexScore(clip, a.key.key, a.key.scale) : 0;
      exact += score === 1 ? 1 : 0;
      mirex += score;
      const bpm = a.tempo?.bpm ?? 0;
      const ok = within4(bpm, clip.bpm);
      const oct = !ok && [2, 0.5, 3, 1 / 3].some((f) => within4(bpm, clip.bpm * f));
      tempoOk += ok ? 1 : 0;
      octave += oct ? 1 : 0;
      const truth = `${NAMES[clip.tonic]} ${clip.minor ? "minor" : "major"}`;
      rows.push(
        `${String(i).padStart(2)} ${truth.padEnd(9)} ${String(clip.bpm).padStart(3)} BPM ${clip.drums ? "drums   " : "no drums"} -> ${a.key ? `${a.key.key} ${a.key.scale}` : "none"} (${score}), ${bpm.toFixed(1)} BPM${ok ? "" : oct ? " (octave error)" : " (wrong)"}`,
      );
      console.log(rows.at(-1));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const n = clips.length;
  const pct = (x: number) => `${((100 * x) / n).toFixed(1)} %`;
  console.log(
    `\n${n} clips of ${SECONDS} s (essentia.js ${essentiaVersion()}), ${((Date.now() - started) / 1000).toFixed(0)} s:` +
      `\n  key exact ${pct(exact)}, MIREX-weighted ${pct(mirex)}` +
      `\n  tempo within 4 % ${pct(tempoOk)}, octave errors ${octave}, other errors ${n - tempoOk - octave}`,
  );
}

await main();
