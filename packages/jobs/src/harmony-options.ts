/**
 * What a harmony job may ask for: the interval of the harmony voice (a third or a sixth, counted on
 * the key's scale), its direction, and the key the interval is counted in. Spelled once: the API's
 * form, the records, the worker, the CLI and the dashboard read these.
 */
export const HARMONY_INTERVALS = ["third", "sixth"] as const;
export type HarmonyInterval = (typeof HARMONY_INTERVALS)[number];
export const HARMONY_DIRECTIONS = ["above", "below"] as const;
export type HarmonyDirection = (typeof HARMONY_DIRECTIONS)[number];

export const isHarmonyInterval = (name: string): name is HarmonyInterval =>
  (HARMONY_INTERVALS as readonly string[]).includes(name);
export const isHarmonyDirection = (name: string): name is HarmonyDirection =>
  (HARMONY_DIRECTIONS as readonly string[]).includes(name);

/** How many scale steps each interval spans (a third: two steps up the scale; a sixth: five). */
export const HARMONY_SCALE_STEPS: Record<HarmonyInterval, number> = { third: 2, sixth: 5 };

/** The tonics as the audio analysis (Essentia's KeyExtractor) names them; a key is written back in these. */
export const PITCH_CLASS_NAMES = ["C", "C#", "D", "Eb", "E", "F", "F#", "G", "Ab", "A", "Bb", "B"] as const;

export type KeyScale = "major" | "minor";
export interface MusicalKey {
  /** The tonic's pitch class, 0 (C) to 11 (B). */
  tonic: number;
  scale: KeyScale;
}

/** Semitones above the tonic of each degree: major (Ionian) and natural minor (Aeolian). */
const SCALE_STEPS: Record<KeyScale, readonly number[]> = {
  major: [0, 2, 4, 5, 7, 9, 11],
  minor: [0, 2, 3, 5, 7, 8, 10],
};

const LETTERS: Record<string, number> = { C: 0, D: 2, E: 4, F: 5, G: 7, A: 9, B: 11 };

/**
 * A key as people write it: a tonic (a letter with `#` or `b`, or ♯ ♭) and `major` or `minor`
 * (`maj`, `min` too), any case: `A minor`, `F# major`, `bb min`. Null for anything else.
 */
export function parseMusicalKey(text: string): MusicalKey | null {
  const match = /^\s*([A-Ga-g])\s*([#♯b♭]?)\s+(major|minor|maj|min)\s*$/i.exec(text);
  if (!match) return null;
  const accidental = match[2] === "#" || match[2] === "♯" ? 1 : match[2] === "b" || match[2] === "♭" ? -1 : 0;
  const tonic = (LETTERS[match[1]!.toUpperCase()]! + accidental + 12) % 12;
  return { tonic, scale: match[3]!.toLowerCase().startsWith("maj") ? "major" : "minor" };
}

/** The key's name as the records spell it (`A minor`, `F# major`, `Eb major`). */
export function musicalKeyName(key: MusicalKey): string {
  return `${PITCH_CLASS_NAMES[key.tonic]} ${key.scale}`;
}

/** The key's seven pitch classes, from the tonic up. */
export function scalePitchClasses(key: MusicalKey): number[] {
  return SCALE_STEPS[key.scale].map((step) => (key.tonic + step) % 12);
}
