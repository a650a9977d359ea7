// Sung-like melodies of a known score, for the harmony's test and `pnpm eval:harmony`: what the
// output's pitch should land on is known note by note.
import { scalePitchClasses, type MusicalKey } from "@mixdown/jobs";

export interface ScoreNote {
  /** seconds */
  start: number;
  end: number;
  /** the written note (MIDI), a note of the key's scale */
  midi: number;
}

/** A melody walking `key`'s scale around `centre` (MIDI), `count` notes of `noteSeconds`, seeded. */
export function melodyScore(
  key: MusicalKey,
  options: { centre: number; count: number; noteSeconds: number; seed: number },
): ScoreNote[] {
  const classes = scalePitchClasses(key);
  const ladder: number[] = [];
  for (let m = options.centre - 7; m <= options.centre + 7; m++) if (classes.includes(m % 12)) ladder.push(m);
  let seed = options.seed;
  const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  let index = ladder.length >> 1;
  const notes: ScoreNote[] = [];
  let t = 0.2;
  for (let i = 0; i < options.count; i++) {
    index = Math.max(0, Math.min(ladder.length - 1, index + Math.floor(random() * 5) - 2));
    const length = options.noteSeconds * (random() < 0.25 ? 2 : 1);
    notes.push({ start: t, end: t + length, midi: ladder[index]! });
    // most notes parted by a short gap (a consonant's place), some sung legato
    t += length + (random() < 0.7 ? 0.06 : 0);
  }
  return notes;
}

/**
 * A voice-like rendering of `score`, mono at `rate`: a glottal-like harmonic series (40 partials,
 * falling 6 dB an octave) through the formants of an "ah" (700, 1220, 2600 Hz), a 5.5 Hz vibrato of
 * `vibratoCents` and each note sung `detuneCents` off at most (seeded), 20 ms onsets and
 * releases, a 30 ms glide into legato notes. Peak about -6 dBFS.
 */
export function singMelody(
  score: ScoreNote[],
  options: { rate?: number; vibratoCents?: number; detuneCents?: number; seed?: number } = {},
): Float32Array {
  const rate = options.rate ?? 44100;
  const vibrato = (options.vibratoCents ?? 20) / 100;
  const detune = (options.detuneCents ?? 15) / 100;
  let seed = options.seed ?? 7;
  const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  const end = (score.at(-1)?.end ?? 0) + 0.3;
  const out = new Float32Array(Math.round(end * rate));
  const formants = [
    { f: 700, b: 110, g: 1 },
    { f: 1220, b: 120, g: 0.5 },
    { f: 2600, b: 160, g: 0.25 },
  ];
  const gain = (hz: number) => formants.reduce((sum, { f, b, g }) => sum + g / (1 + ((hz - f) / b) ** 2), 0.02);
  let phase = 0;
  const offsets = score.map(() => (random() * 2 - 1) * detune);
  for (const [n, note] of score.entries()) {
    const legato = n > 0 && Math.abs(score[n - 1]!.end - note.start) < 1e-6;
    const from = Math.round(note.start * rate);
    const to = Math.round(note.end * rate);
    if (!legato) phase = 0;
    for (let i = from; i < to && i < out.length; i++) {
      const t = (i - from) / rate;
      let midi = note.midi + offsets[n]! + vibrato * Math.sin(2 * Math.PI * 5.5 * t) * Math.min(1, t / 0.3);
      if (legato && t < 0.03) midi += (score[n - 1]!.midi + offsets[n - 1]! - note.midi - offsets[n]!) * (1 - t / 0.03);
      const f0 = 440 * 2 ** ((midi - 69) / 12);
      phase += (2 * Math.PI * f0) / rate;
      const envelope =
        Math.min(1, legato ? 1 : t / 0.02) *
        Math.min(1, (to - i) / rate / (n < score.length - 1 && score[n + 1]!.start === note.end ? 1e-9 : 0.02));
      let v = 0;
      for (let k = 1; k <= 40 && k * f0 < rate / 2 - 1000; k++) v += (gain(k * f0) / k) * Math.sin(k * phase);
      out[i] = v * envelope;
    }
  }
  let peak = 0;
  for (const v of out) peak = Math.max(peak, Math.abs(v));
  if (peak > 0) for (let i = 0; i < out.length; i++) out[i] = (out[i]! * 0.5) / peak;
  return out;
}

/** The intended note of each pitch frame (`hopSeconds` apart) from `score`, NaN where none is sung or in the 40 ms after a note starts. */
export function framesOfScore(
  score: ScoreNote[],
  frames: number,
  hopSeconds: number,
  noteOf: (note: ScoreNote) => number,
): Float64Array {
  const out = new Float64Array(frames).fill(Number.NaN);
  for (const note of score)
    for (
      let t = Math.ceil((note.start + 0.04) / hopSeconds);
      t < Math.min(frames, Math.floor((note.end - 0.02) / hopSeconds));
      t++
    )
      out[t] = noteOf(note);
  return out;
}

const hz = (midi: number) => 440 * 2 ** ((midi - 69) / 12);

/** The pitch range a harmony of `notes` (MIDI) is measured in: a fifth either side of them, below an octave's reach. */
export function rangeAround(notes: number[]): { fMin: number; fMax: number } {
  return { fMin: hz(Math.min(...notes) - 7), fMax: hz(Math.max(...notes) + 7) };
}
