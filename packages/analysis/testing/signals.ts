import { execFile } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

export const PITCH_CLASSES = ["C", "C#", "D", "Eb", "E", "F", "F#", "G", "Ab", "A", "Bb", "B"] as const;

/** A note's frequency (MIDI number, A4 = 69 = 440 Hz). */
const hz = (midi: number) => 440 * 2 ** ((midi - 69) / 12);

/**
 * A generated piece in a known key and tempo: the key's I-IV-V-I (minor: i-iv-V-i) as organ-like
 * chords of five harmonics, one chord a bar, each beat struck again with a decaying envelope and,
 * with `drums`, a noise click on every beat. Mono, 44.1 kHz, peak about -6 dBFS.
 */
export function chordPiece(options: {
  tonic: number;
  minor: boolean;
  bpm: number;
  seconds: number;
  drums?: boolean;
}): Float32Array {
  const rate = 44100;
  const n = Math.round(options.seconds * rate);
  const out = new Float32Array(n);
  const root = 48 + options.tonic;
  const third = options.minor ? 3 : 4;
  const chords = [
    [0, third, 7],
    [5, 5 + third, 12],
    [7, 11, 14],
    [0, third, 7],
  ].map((c) => c.map((i) => root + i));
  const beat = 60 / options.bpm;
  let noise = 12345;
  for (let i = 0; i < n; i++) {
    const t = i / rate;
    const beatIndex = Math.floor(t / beat);
    const sinceBeat = t - beatIndex * beat;
    const chord = chords[Math.floor(beatIndex / 4) % 4]!;
    const env = 0.35 + 0.65 * Math.exp(-sinceBeat * 6);
    let v = 0;
    for (const note of [...chord, chord[0]! - 12]) {
      const f = hz(note);
      for (let k = 1; k <= 5; k++) v += Math.sin(2 * Math.PI * f * k * t) / k;
    }
    v *= env * 0.05;
    if (options.drums && sinceBeat < 0.03) {
      noise = (noise * 1103515245 + 12345) & 0x7fffffff;
      v += ((noise / 0x7fffffff) * 2 - 1) * 0.4 * Math.exp(-sinceBeat * 150);
    }
    out[i] = v;
  }
  return out;
}

/** A stereo sine (both channels the same) at `dbfs` peak. */
export function sine(options: { frequency: number; dbfs: number; seconds: number; rate: number }): Float32Array {
  const n = Math.round(options.seconds * options.rate);
  const amplitude = 10 ** (options.dbfs / 20);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = amplitude * Math.sin((2 * Math.PI * options.frequency * i) / options.rate);
  return out;
}

/** Writes `channels` (each the same length) as a 32-bit float WAV at `rate`: the samples as they are. */
export async function writeFloatWav(path: string, channels: Float32Array[], rate: number): Promise<void> {
  const frames = channels[0]!.length;
  const interleaved = new Float32Array(frames * channels.length);
  for (let i = 0; i < frames; i++)
    for (let c = 0; c < channels.length; c++) interleaved[i * channels.length + c] = channels[c]![i]!;
  const raw = `${path}.f32`;
  await writeFile(raw, Buffer.from(interleaved.buffer));
  await run("ffmpeg", [
    "-hide_banner",
    "-loglevel",
    "error",
    "-y",
    "-f",
    "f32le",
    "-ar",
    String(rate),
    "-ac",
    String(channels.length),
    "-i",
    raw,
    "-c:a",
    "pcm_f32le",
    path,
  ]);
  await rm(raw, { force: true });
}

/**
 * libebur128's true peak of a file: ffmpeg's loudnorm filter measures with its port of libebur128
 * (`print_format=json`, two decimals). Its integrated and range figures are not the plain
 * whole-file measure (it measures in its dynamic mode's frames: 0.3 LU off on Tech 3342's case 1),
 * so only its true peak serves as a reference.
 */
export async function libebur128TruePeak(path: string): Promise<number> {
  const { stderr } = await run("ffmpeg", [
    "-hide_banner",
    "-nostats",
    "-i",
    path,
    "-af",
    "loudnorm=print_format=json",
    "-f",
    "null",
    "-",
  ]);
  const json = JSON.parse(stderr.slice(stderr.lastIndexOf("{"), stderr.lastIndexOf("}") + 1)) as Record<string, string>;
  return Number(json.input_tp);
}
