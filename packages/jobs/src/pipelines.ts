/**
 * The steps a pipeline (`POST /pipelines`) chains and the presets for the common chains. Each step
 * runs as an ordinary job of a job table kind (`kind`); a `recombine` runs inside the conversion
 * before it, which mixes its converted vocal onto the separation's backing.
 *
 * What flows between steps is typed: a step `takes` one sort of audio and `gives` another, and a
 * chain is checked at create (`pipelineChainProblem`) so a `convert` of a mix is refused before
 * anything is stored.
 */
export type PipelineAudio = "mix" | "vocal";

export const PIPELINE_STEPS = {
  separate: {
    kind: "separation",
    takes: "mix",
    gives: "vocal",
    description:
      "A vocal separation of the input (options: `model`, `ensemble` as `POST /vocal-separations` takes them); its vocal goes on, its backing is kept for a later `recombine`",
  },
  repair: {
    kind: "vocal-repair",
    takes: "vocal",
    gives: "vocal",
    description:
      "A vocal repair of the vocal (options: `steps` (required), the repairs `dereverb`, `denoise`, comma-separated or an array, as `POST /vocal-repairs` takes them; the vocal is repaired as it comes, no `isolateVocal`)",
  },
  convert: {
    kind: "voice-conversion",
    takes: "vocal",
    gives: "vocal",
    description:
      "A voice conversion of the vocal (options: `voiceModelId` (required), `conversionStrength`, `modelVolumeMix`, `pitchShift`, `pre`, `post` as `POST /voice-conversions` takes them)",
  },
  recombine: {
    kind: "voice-conversion",
    takes: "vocal",
    gives: "mix",
    description:
      "The converted vocal mixed onto the backing of the `separate` before it (no options): done by the `convert` right before it, as a conversion with a backing track does, so it must follow a `convert` that follows a `separate`",
  },
  master: {
    kind: "mastering",
    takes: "mix",
    gives: "mix",
    description:
      "A mastering of the mix to a loudness target (options: `targetLufs`, default -14, and `truePeakDb`, default -1, as `POST /masterings` takes them; ffmpeg's two-pass loudnorm. Reference mastering needs a second upload and is not a step)",
  },
} as const satisfies Record<string, { kind: string; takes: PipelineAudio; gives: PipelineAudio; description: string }>;

export type PipelineStepName = keyof typeof PIPELINE_STEPS;
export const PIPELINE_STEP_NAMES = Object.keys(PIPELINE_STEPS) as PipelineStepName[];

export function isPipelineStepName(name: string): name is PipelineStepName {
  return Object.hasOwn(PIPELINE_STEPS, name);
}

/** A preset's step: its name and the options it fixes (a caller's `voiceModelId` fills a `convert`'s). */
export interface PresetStep {
  step: PipelineStepName;
  options: Record<string, unknown>;
}

/** A cover's chain (the `cover` preset's, and the start of `cover-mastered`'s). */
const COVER_STEPS = [
  { step: "separate", options: {} },
  { step: "convert", options: {} },
  { step: "recombine", options: {} },
] as const satisfies readonly PresetStep[];

export const PIPELINE_PRESETS = {
  karaoke: {
    description: "The backing track of a song: a vocal separation (its backing is the karaoke track, its vocal kept too)",
    input: "mix",
    steps: [{ step: "separate", options: {} }],
  },
  cover: {
    description:
      "A song sung by a voice model: separate, convert the vocal with `voiceModelId` (required), recombine it with the backing",
    input: "mix",
    steps: COVER_STEPS,
  },
  "vocal-swap": {
    description: "A vocal recording sung by a voice model: convert the vocal with `voiceModelId` (required)",
    input: "vocal",
    steps: [{ step: "convert", options: {} }],
  },
  "vocal-cleanup": {
    description:
      "The vocal of a song with its room reverb and noise removed: separate, then repair the vocal (dereverb, then denoise; the server needs the vocal split model for dereverb)",
    input: "mix",
    steps: [
      { step: "separate", options: {} },
      { step: "repair", options: { steps: "dereverb,denoise" } },
    ],
  },
  "cover-mastered": {
    description:
      "A cover, mastered: separate, convert the vocal with `voiceModelId` (required), recombine it with the backing, master the mix to -14 LUFS and -1 dBTP (loudnorm)",
    input: "mix",
    steps: [...COVER_STEPS, { step: "master", options: { targetLufs: -14, truePeakDb: -1 } }],
  },
} as const satisfies Record<string, { description: string; input: PipelineAudio; steps: readonly PresetStep[] }>;

export type PipelinePresetName = keyof typeof PIPELINE_PRESETS;
export const PIPELINE_PRESET_NAMES = Object.keys(PIPELINE_PRESETS) as PipelinePresetName[];

export function isPipelinePresetName(name: string): name is PipelinePresetName {
  return Object.hasOwn(PIPELINE_PRESETS, name);
}

/**
 * What is wrong with a chain of steps on an input of `input` audio, naming the first step that
 * cannot take what the step before it gives (`steps[1]: ...`), or null when it is a chain.
 */
export function pipelineChainProblem(input: PipelineAudio, steps: readonly PipelineStepName[]): string | null {
  if (steps.length === 0) return "steps: at least one step is required";
  let flowing: PipelineAudio = input;
  for (const [index, step] of steps.entries()) {
    const entry = PIPELINE_STEPS[step];
    if (step === "recombine") {
      const separated = steps.slice(0, index).includes("separate");
      if (steps[index - 1] !== "convert" || !separated)
        return `steps[${index}]: recombine must follow a convert that follows a separate (it mixes the converted vocal onto the separation's backing)`;
    } else if (entry.takes !== flowing) {
      const before = index === 0 ? `the input (input=${input})` : `steps[${index - 1}] (${steps[index - 1]})`;
      return `steps[${index}]: ${step} takes a ${entry.takes}, but ${before} gives a ${flowing}${entry.takes === "vocal" ? "; put a separate before it, or send a vocal with input=vocal" : ""}`;
    }
    flowing = entry.gives;
  }
  return null;
}
