// Which text-to-speech synthesizers and languages this machine has (Piper voices in
// TTS_PIPER_DIR, Festival's HTS voice, espeak-ng), found without loading any of them: the API
// checks a job's language with it, the worker picks the synthesizer. speech.ts speaks.
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, readdir, stat } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { PiperVoiceError, readPiperConfig, type PiperConfig } from "./piper-config.ts";

const run = promisify(execFile);

/**
 * The base synthesizers text-to-speech speaks with before a voice model converts the speech.
 * `piper`: a Piper voice (neural VITS, ONNX) installed in TTS_PIPER_DIR (piper.ts);
 * `festival`: Festival's HTS voice `cmu_us_slt_arctic_hts` (Debian `festvox-us-slt-hts`), a
 * statistical parametric voice trained on recorded speech; `espeak-ng`: formant synthesis, always
 * small and available, the fallback. See docs/tts.md for the measure that ranks them.
 */
export type SynthesizerName = "piper" | "festival" | "espeak-ng";
/** TTS_SYNTHESIZER: `auto` takes a Piper voice for the language when installed, else Festival's HTS voice for English, else espeak-ng. */
export type SynthesizerChoice = "auto" | SynthesizerName;

/** A Piper voice installed in TTS_PIPER_DIR: `<name>.onnx` with its `<name>.onnx.json`. */
export interface InstalledPiperVoice {
  name: string;
  modelPath: string;
  /** The espeak-ng voice it speaks, lowercase (its config's espeak.voice): the language it serves. */
  language: string;
  sampleRate: number;
  /** Its config as read here (readPiperConfig): what synthesizeSpeech speaks it with (`piperConfig`). */
  config: PiperConfig;
}

/**
 * The Piper voices in `dir`, by name: each `<name>.onnx` whose `<name>.onnx.json` is a config
 * Mixdown runs. A voice whose config is not is left out and named in `problems`.
 */
export async function listPiperVoices(dir: string): Promise<{ voices: InstalledPiperVoice[]; problems: string[] }> {
  const names = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT" || err.code === "ENOTDIR") return [] as string[];
    throw err;
  });
  const voices: InstalledPiperVoice[] = [];
  const problems: string[] = [];
  for (const file of names.filter((n) => n.endsWith(".onnx")).sort()) {
    const modelPath = join(dir, file);
    try {
      const config = await readPiperConfig(`${modelPath}.json`);
      voices.push({
        name: file.slice(0, -".onnx".length),
        modelPath,
        language: config.espeak.voice.toLowerCase(),
        sampleRate: config.audio.sample_rate,
        config,
      });
    } catch (err) {
      if (!(err instanceof PiperVoiceError)) throw err;
      problems.push(err.message);
    }
  }
  return { voices, problems };
}

/**
 * The Piper voice that speaks `language` (null: the default, English: an `en-us` voice first,
 * then `en`, then any English one), the first by name where several do; undefined when none does.
 */
export function piperVoiceFor(voices: readonly InstalledPiperVoice[], language: string | null): InstalledPiperVoice | undefined {
  if (language !== null) return voices.find((v) => v.language === language);
  return (
    voices.find((v) => v.language === "en-us") ??
    voices.find((v) => v.language === "en") ??
    voices.find((v) => v.language.startsWith("en-"))
  );
}

export const FESTIVAL_VOICE = "cmu_us_slt_arctic_hts";
export const ESPEAK_VOICE = "en-us";
/** Where Debian installs Festival's voices (`<language>/<voice>`). */
const FESTIVAL_VOICE_DIRS = ["/usr/share/festival/voices", "/usr/local/share/festival/voices"];

const INSTALL_FESTIVAL = "apt-get install festival festvox-us-slt-hts";
const INSTALL_ESPEAK = "apt-get install espeak-ng";

/** No synthesizer the setting allows is installed on this machine: a job cannot succeed here until one is. */
export class SynthesizerMissingError extends Error {
  override name = "SynthesizerMissingError";
}

/** The synthesizer produced no usable audio for the text (nothing to speak in it). */
export class NothingToSpeakError extends Error {
  override name = "NothingToSpeakError";
}

async function onPath(command: string, path: string): Promise<string | null> {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const candidate = join(dir, command);
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  return null;
}

async function festivalVoiceInstalled(): Promise<boolean> {
  for (const root of FESTIVAL_VOICE_DIRS) {
    for (const language of ["us", "english"]) {
      if (
        await stat(join(root, language, FESTIVAL_VOICE)).then(
          (s) => s.isDirectory(),
          () => false,
        )
      )
        return true;
    }
  }
  return false;
}

/** What is missing for Festival's HTS voice, or null when it can speak. */
async function festivalProblem(path: string): Promise<string | null> {
  if (!(await onPath("text2wave", path))) return `Festival's text2wave is not on PATH (${INSTALL_FESTIVAL})`;
  if (!(await festivalVoiceInstalled())) return `Festival's voice ${FESTIVAL_VOICE} is not installed (${INSTALL_FESTIVAL})`;
  return null;
}

async function espeakProblem(path: string): Promise<string | null> {
  return (await onPath("espeak-ng", path)) ? null : `espeak-ng is not on PATH (${INSTALL_ESPEAK})`;
}

/** The language asked for is not one any installed synthesizer speaks. */
export class LanguageUnavailableError extends Error {
  override name = "LanguageUnavailableError";
}

/** Festival's voice speaks these; espeak-ng speaks the rest (and these where Festival is absent). */
const FESTIVAL_LANGUAGES = new Set(["en", "en-us"]);

/**
 * The languages text to speech can speak on this machine, lowercase and sorted: every voice
 * `espeak-ng --voices` lists, by its language (`de`, `en-gb`, `pt-br`) and by its file's name
 * (`en`, `fr`, `zh`: what `espeak-ng -v` takes), plus Festival's `en`/`en-us` when its voice is
 * installed, plus those of the Piper voices in `piperDir`. Empty when no synthesizer is.
 */
export async function synthesizerLanguages(path = process.env.PATH ?? "", piperDir?: string): Promise<string[]> {
  const found = new Set<string>();
  if (piperDir !== undefined) for (const v of (await listPiperVoices(piperDir)).voices) found.add(v.language);
  if ((await festivalProblem(path)) === null) for (const l of FESTIVAL_LANGUAGES) found.add(l);
  const espeak = await onPath("espeak-ng", path);
  if (espeak) {
    const { stdout } = await run(espeak, ["--voices"], { maxBuffer: 4 * 1024 * 1024 });
    for (const line of stdout.split("\n").slice(1)) {
      // Pty Language Age/Gender VoiceName File [Other languages]
      const columns = line.trim().split(/\s+/);
      if (columns.length < 5) continue;
      found.add(columns[1]!.toLowerCase());
      found.add(columns[4]!.split("/").pop()!.toLowerCase());
    }
  }
  return [...found].sort();
}

let asked: Promise<string[]> | undefined;
/**
 * synthesizerLanguages of this process's PATH and Piper voices (`piperDir`, TTS_PIPER_DIR),
 * asked once (the installed voices do not change while a process runs; the API and the worker
 * both check languages with it). A failure to ask is not kept: the next call asks again.
 */
export function installedLanguages(piperDir?: string): Promise<string[]> {
  return (asked ??= synthesizerLanguages(undefined, piperDir).catch((err: unknown) => {
    asked = undefined;
    throw err;
  }));
}

/**
 * `language` checked against `available` (synthesizerLanguages), matched without regard to case:
 * the form the synthesizers take, or a LanguageUnavailableError naming what exists.
 */
export function checkLanguage(language: string, available: readonly string[]): string {
  const wanted = language.trim().toLowerCase();
  if (available.includes(wanted)) return wanted;
  throw new LanguageUnavailableError(
    available.length === 0
      ? `language ${JSON.stringify(language)} cannot be spoken: no synthesizer is installed`
      : `language ${JSON.stringify(language)} is not one this server speaks; available: ${available.join(", ")}`,
  );
}

/**
 * The synthesizer that speaks `language` (null: the default, English) under `choice`: Festival
 * for English where the setting and the machine allow it, espeak-ng for every other language.
 */
export async function synthesizerFor(
  choice: Exclude<SynthesizerChoice, "piper">,
  language: string | null,
  path = process.env.PATH ?? "",
): Promise<Exclude<SynthesizerName, "piper">> {
  if (language === null || FESTIVAL_LANGUAGES.has(language)) return resolveSynthesizer(choice, path);
  if (choice === "festival")
    throw new SynthesizerMissingError(
      `language ${language} needs espeak-ng, and TTS_SYNTHESIZER=festival allows only Festival's English voice`,
    );
  return resolveSynthesizer("espeak-ng", path);
}

/**
 * The synthesizer `choice` resolves to on this machine (binaries looked up on `path`); throws
 * SynthesizerMissingError naming what to install when none it allows is present.
 */
export async function resolveSynthesizer(
  choice: Exclude<SynthesizerChoice, "piper">,
  path = process.env.PATH ?? "",
): Promise<Exclude<SynthesizerName, "piper">> {
  const festival = choice === "espeak-ng" ? "not allowed" : await festivalProblem(path);
  if (festival === null) return "festival";
  const espeak = choice === "festival" ? "not allowed" : await espeakProblem(path);
  if (espeak === null) return "espeak-ng";
  const problems = [choice !== "espeak-ng" ? festival : null, choice !== "festival" ? espeak : null].filter(Boolean);
  throw new SynthesizerMissingError(
    `no text-to-speech synthesizer is installed on this worker (TTS_SYNTHESIZER=${choice}): ${problems.join("; ")}`,
  );
}
