export { diatonicTarget, midiOf, planHarmony, segmentNotes, shareInTune, type HarmonyNote, type SungNote } from "./notes.ts";
export { renderShifted, shiftPitch, shiftSegments, type ShiftSegment } from "./render.ts";
export {
  HARMONY_MIX_GAIN,
  harmonizeVocal,
  HarmonyInputProblem,
  mixUnder,
  PITCH_HOP,
  PITCH_RANGE,
  PITCH_RATE,
  sungNotes,
  type HarmonizeRequest,
  type HarmonizeResult,
} from "./harmonize.ts";
export { harmonizeFile, type HarmonizeFileOptions, type HarmonyRunners } from "./harmonize-file.ts";
