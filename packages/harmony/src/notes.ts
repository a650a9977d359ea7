import {
  HARMONY_SCALE_STEPS,
  scalePitchClasses,
  type HarmonyDirection,
  type HarmonyInterval,
  type MusicalKey,
} from "@mixdown/jobs";

/** One sung note found in a pitch track: frames `[start, end)` and its pitch, the median over them (MIDI, fractional). */
export interface SungNote {
  start: number;
  end: number;
  midi: number;
}

/** A note with its harmony: the scale note it was snapped to, the diatonic target, and the shift that lands it there. */
export interface HarmonyNote extends SungNote {
  /** the nearest note of the key's scale (MIDI) */
  snapped: number;
  /** the scale note a third or sixth away from `snapped` (MIDI) */
  target: number;
  /** semitones from the sung pitch (`midi`) to `target`: the note's own shift */
  shift: number;
}

export const midiOf = (hz: number) => 69 + 12 * Math.log2(hz / 440);

/** How the notes are cut from a pitch track; each figure was tuned on `pnpm eval:harmony`'s set. */
const SEGMENTATION = {
  /** a pitch this far (semitones) from the note's median for `holdFrames` frames starts a new note: above a sung vibrato's depth */
  splitSemitones: 0.8,
  holdFrames: 5,
  /** unvoiced gaps at most this long (frames) inside a note are bridged (a consonant's dropout) */
  bridgeFrames: 2,
  /** a note shorter than this (frames) joins its neighbour */
  minFrames: 5,
  /** frames of the running median window that smooth the track before the cut */
  smoothFrames: 5,
} as const;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The notes of a pitch track (Hz a frame, 0 where unvoiced): each voiced run (gaps of up to two
 * frames bridged) is one note until its pitch leaves the note's running median by more than 0.8
 * semitone for five frames (a new note: a vibrato stays within), and notes shorter than five
 * frames join the note before (or after) them.
 */
export function segmentNotes(f0: Float32Array): SungNote[] {
  const s = SEGMENTATION;
  const midi = Array.from(f0, (hz) => (hz > 0 ? midiOf(hz) : Number.NaN));
  const half = s.smoothFrames >> 1;
  const smooth = midi.map((value, t) => {
    if (Number.isNaN(value)) return value;
    const window = midi.slice(Math.max(0, t - half), t + half + 1).filter((v) => !Number.isNaN(v));
    return median(window);
  });
  const notes: Array<{ start: number; end: number; frames: number[] }> = [];
  let current: { start: number; end: number; frames: number[] } | null = null;
  let unvoiced = 0;
  let away = 0;
  for (let t = 0; t < smooth.length; t++) {
    const value = smooth[t]!;
    if (Number.isNaN(value)) {
      if (current && ++unvoiced > s.bridgeFrames) {
        notes.push(current);
        current = null;
      }
      continue;
    }
    unvoiced = 0;
    if (!current) {
      current = { start: t, end: t + 1, frames: [value] };
      away = 0;
      continue;
    }
    const centre = median(current.frames.slice(-50));
    away = Math.abs(value - centre) > s.splitSemitones ? away + 1 : 0;
    if (away >= s.holdFrames) {
      const cut = t - away + 1;
      const kept = current.frames.length - (t - cut);
      notes.push({ start: current.start, end: cut, frames: current.frames.slice(0, kept) });
      current = { start: cut, end: t + 1, frames: [...current.frames.slice(kept), value] };
      away = 0;
      continue;
    }
    current.frames.push(value);
    current.end = t + 1;
  }
  if (current) notes.push(current);
  const merged: typeof notes = [];
  for (const note of notes) {
    const before = merged.at(-1);
    if (note.end - note.start < s.minFrames && before && note.start - before.end <= s.bridgeFrames + 1) {
      before.end = note.end;
      before.frames.push(...note.frames);
    } else if (before && before.end - before.start < s.minFrames && note.start - before.end <= s.bridgeFrames + 1) {
      merged[merged.length - 1] = { start: before.start, end: note.end, frames: [...before.frames, ...note.frames] };
    } else merged.push(note);
  }
  return merged
    .filter((n) => n.end - n.start >= s.minFrames)
    .map((n) => ({ start: n.start, end: n.end, midi: median(n.frames.filter((v) => !Number.isNaN(v))) }));
}

/**
 * The diatonic harmony of a sung pitch (MIDI, fractional) in `key`: the pitch snapped to the
 * nearest note of the key's scale (off-scale notes first land on the scale), then the scale note
 * two steps (a third) or five steps (a sixth) above or below it, so a third is 3 or 4 semitones and
 * a sixth 8 or 9, as the degree has it.
 */
export function diatonicTarget(
  midi: number,
  key: MusicalKey,
  interval: HarmonyInterval,
  direction: HarmonyDirection,
): { snapped: number; target: number } {
  const classes = scalePitchClasses(key);
  // the scale's notes around the pitch, in order
  const base = Math.floor(midi) - 24;
  const ladder: number[] = [];
  for (let m = base; m <= base + 48; m++) if (classes.includes(((m % 12) + 12) % 12)) ladder.push(m);
  let index = 0;
  for (let i = 1; i < ladder.length; i++) if (Math.abs(ladder[i]! - midi) < Math.abs(ladder[index]! - midi)) index = i;
  const steps = HARMONY_SCALE_STEPS[interval] * (direction === "above" ? 1 : -1);
  return { snapped: ladder[index]!, target: ladder[index + steps]! };
}

/** Each note's harmony: its target and the shift from the sung pitch that lands the note's median on it. */
export function planHarmony(
  notes: SungNote[],
  key: MusicalKey,
  interval: HarmonyInterval,
  direction: HarmonyDirection,
): HarmonyNote[] {
  return notes.map((note) => {
    const { snapped, target } = diatonicTarget(note.midi, key, interval, direction);
    return { ...note, snapped, target, shift: target - note.midi };
  });
}

/**
 * The share of the voiced frames of `f0` (Hz) within `cents` of a note of `key`'s scale, or, with
 * `targets` (a MIDI note a frame, NaN where none is meant), of the frame's intended note; frames
 * without an intended note are left out. NaN when no frame counts.
 */
export function shareInTune(f0: Float32Array, options: { key: MusicalKey; cents?: number; targets?: ArrayLike<number> }): number {
  const cents = options.cents ?? 30;
  const classes = scalePitchClasses(options.key);
  let counted = 0;
  let inTune = 0;
  for (let t = 0; t < f0.length; t++) {
    if (!(f0[t]! > 0)) continue;
    const m = midiOf(f0[t]!);
    let off: number;
    if (options.targets) {
      const target = options.targets[t];
      if (target === undefined || Number.isNaN(target)) continue;
      off = Math.abs(m - target) * 100;
    } else {
      const nearest = Math.round(m);
      off = Infinity;
      for (let n = nearest - 1; n <= nearest + 1; n++)
        if (classes.includes(((n % 12) + 12) % 12)) off = Math.min(off, Math.abs(m - n) * 100);
    }
    counted++;
    if (off <= cents) inTune++;
  }
  return counted ? inTune / counted : Number.NaN;
}
