import { execFile } from "node:child_process";
import { constants, createReadStream, createWriteStream } from "node:fs";
import { access, open, readdir, rm, stat, writeFile } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { readWavLayout } from "@mixdown/audio";
import { PiperVoice, PiperVoiceError, readPiperConfig, type PiperConfig } from "./piper.ts";

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

/** Splits a long piece at the last comma-like mark, else the last space, before `max` characters. */
function cutLong(piece: string, max: number): string[] {
  const out: string[] = [];
  let rest = piece;
  while (rest.length > max) {
    const head = rest.slice(0, max);
    const at = Math.max(head.search(/[,;:)\]—–-][^,;:)\]—–-]*$/), 0) || head.lastIndexOf(" ");
    const cut = at > max / 4 ? at + 1 : max;
    out.push(rest.slice(0, cut).trim());
    rest = rest.slice(cut).trim();
  }
  if (rest) out.push(rest);
  return out;
}

/**
 * The text as pieces of at most `maxChars` characters, each ending at a sentence end where the
 * text has one (`.`, `!`, `?`, `…`, a line break); consecutive short sentences share a piece, a
 * sentence longer than `maxChars` is cut at a comma, else a space. Each piece is synthesized on
 * its own, so memory stays that of one piece however long the text.
 */
export function splitSentences(text: string, maxChars = 600): string[] {
  const sentences = text
    .replace(/\r\n?/g, "\n")
    .split(/(?<=[.!?…。！？])\s+|\n\s*/u)
    .map((s) => s.replace(/\s+/g, " ").trim())
    .filter((s) => s.length > 0)
    .flatMap((s) => cutLong(s, maxChars));
  const pieces: string[] = [];
  let current = "";
  for (const sentence of sentences) {
    if (current && current.length + 1 + sentence.length > maxChars) {
      pieces.push(current);
      current = "";
    }
    current = current ? `${current} ${sentence}` : sentence;
  }
  if (current) pieces.push(current);
  return pieces;
}

/** Festival reads Latin-1 text: accents are folded to their letters, other characters become spaces. */
function festivalText(text: string): string {
  return text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/[‘’]/g, "'")
    .replace(/[“”]/g, '"')
    .replace(/[^\x20-\x7e\xa0-\xff\n]/g, " ");
}

/**
 * Whether Festival's English voice finds anything to say in `text`: a text in another script
 * (Cyrillic, CJK, ...) folds to nothing for it, where espeak-ng has a voice for most languages.
 */
export function festivalCanSpeak(text: string): boolean {
  return /[A-Za-z0-9\xc0-\xff]/.test(festivalText(text));
}

interface PcmFormat {
  audioFormat: number;
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
}

/** The format and the data chunk's place in a RIFF WAVE file (the synthesizers write plain PCM). */
function wavHeader(format: PcmFormat, dataBytes: number): Buffer {
  const h = Buffer.alloc(44);
  const blockAlign = (format.channels * format.bitsPerSample) / 8;
  h.write("RIFF", 0, "ascii");
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write("WAVEfmt ", 8, "ascii");
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(format.audioFormat, 20);
  h.writeUInt16LE(format.channels, 22);
  h.writeUInt32LE(format.sampleRate, 24);
  h.writeUInt32LE(format.sampleRate * blockAlign, 28);
  h.writeUInt16LE(blockAlign, 32);
  h.writeUInt16LE(format.bitsPerSample, 34);
  h.write("data", 36, "ascii");
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

async function speakPiece(
  synthesizer: Exclude<SynthesizerName, "piper">,
  language: string,
  text: string,
  textPath: string,
  wavPath: string,
  signal?: AbortSignal,
): Promise<void> {
  const options = { signal, maxBuffer: 1024 * 1024 };
  if (synthesizer === "festival") {
    await writeFile(textPath, festivalText(text), "latin1");
    await run("text2wave", ["-eval", `(voice_${FESTIVAL_VOICE})`, "-o", wavPath, textPath], options);
  } else {
    await writeFile(textPath, text, "utf8");
    await run("espeak-ng", ["-v", language, "-w", wavPath, "-f", textPath], options);
  }
}

export interface SynthesizeOptions {
  synthesizer: SynthesizerName;
  /** The Piper voice's `.onnx` (listPiperVoices), with synthesizer `piper`. */
  piperModelPath?: string;
  /** Its config as listPiperVoices read it; absent, it is read from `<piperModelPath>.json`. */
  piperConfig?: PiperConfig;
  /** espeak-ng's voice (a language, see synthesizerLanguages); ESPEAK_VOICE when absent. Festival speaks English. */
  language?: string;
  /** Where the pieces' temporary files go (the job's work directory). */
  workDir: string;
  /** The rate the speech is written at (the voice model's), resampled from the synthesizer's own. */
  sampleRate: number;
  /** Characters per piece (see splitSentences). */
  maxPieceChars?: number;
  signal?: AbortSignal;
  /** Fraction of the text spoken so far. */
  onProgress?: (fraction: number) => void;
}

export interface SynthesizeResult {
  synthesizer: SynthesizerName;
  pieces: number;
  /** Length of the speech, in seconds. */
  seconds: number;
}

/**
 * Speaks `text` into a mono WAV at `outPath`: piece by piece (splitSentences), each piece's PCM
 * appended to one file as soon as it is spoken, so memory holds one piece at most; then resampled
 * (ffmpeg, soxr) to `sampleRate`. A missing binary is a SynthesizerMissingError.
 */
export async function synthesizeSpeech(text: string, outPath: string, options: SynthesizeOptions): Promise<SynthesizeResult> {
  const { synthesizer, workDir, signal } = options;
  const joined = join(workDir, "speech-native.wav");
  const spoken =
    synthesizer === "piper" ? await speakPiper(text, joined, options) : await speakPieces(synthesizer, text, joined, options);
  await run(
    "ffmpeg",
    [
      "-nostdin",
      "-v",
      "error",
      "-y",
      "-i",
      joined,
      "-ac",
      "1",
      "-af",
      `aresample=${options.sampleRate}:resampler=soxr`,
      "-c:a",
      "pcm_s16le",
      outPath,
    ],
    { signal },
  ).catch((err: Error) => {
    if (signal?.aborted) throw signal.reason;
    throw err;
  });
  await rm(joined, { force: true });
  return { synthesizer, ...spoken };
}

/** Writes 16-bit PCM to a WAV at `path` as it comes, then its header; memory holds one chunk. */
async function writePcm(
  path: string,
  produce: (write: (pcm: Uint8Array) => Promise<void>) => Promise<PcmFormat | undefined>,
): Promise<{ format: PcmFormat; dataBytes: number }> {
  const sink = createWriteStream(path);
  const opened = new Promise((resolve, reject) => sink.once("open", resolve).once("error", reject));
  let format: PcmFormat | undefined;
  let dataBytes = 0;
  try {
    await opened;
    const write = (pcm: Uint8Array) =>
      new Promise<void>((resolve, reject) => sink.write(pcm, (e) => (e ? reject(e) : resolve())));
    await write(Buffer.alloc(44));
    format = await produce(async (pcm) => {
      await write(pcm);
      dataBytes += pcm.byteLength;
    });
  } finally {
    await new Promise<void>((resolve) => sink.end(resolve));
  }
  if (!format || dataBytes === 0) {
    await rm(path, { force: true });
    throw new NothingToSpeakError("the text has nothing the synthesizer could speak");
  }
  const file = await open(path, "r+");
  try {
    await file.write(wavHeader(format, dataBytes), 0, 44, 0);
  } finally {
    await file.close();
  }
  return { format, dataBytes };
}

/** The text spoken by a Piper voice, sentence by sentence (PiperVoice.speak), into `path` at the voice's rate. */
async function speakPiper(text: string, path: string, options: SynthesizeOptions): Promise<{ pieces: number; seconds: number }> {
  if (!options.piperModelPath) throw new Error("synthesizer piper needs piperModelPath");
  const voice = await PiperVoice.load(options.piperModelPath, { config: options.piperConfig }).catch((err: unknown) => {
    throw err instanceof PiperVoiceError ? new SynthesizerMissingError(err.message) : err;
  });
  let pieces = 0;
  try {
    const { format, dataBytes } = await writePcm(path, async (write) => {
      // PiperVoice.speak phonemizes the whole text, then speaks a sentence at a time.
      for await (const samples of voice.speak(text, {
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      })) {
        pieces++;
        await write(new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength));
      }
      return pieces > 0 ? { audioFormat: 1, channels: 1, sampleRate: voice.sampleRate, bitsPerSample: 16 } : undefined;
    });
    return { pieces, seconds: dataBytes / 2 / format.sampleRate };
  } finally {
    await voice.release();
  }
}

/** The text spoken by Festival or espeak-ng, piece by piece (splitSentences), into `path` at the synthesizer's rate. */
async function speakPieces(
  synthesizer: Exclude<SynthesizerName, "piper">,
  text: string,
  joined: string,
  options: SynthesizeOptions,
): Promise<{ pieces: number; seconds: number }> {
  const { workDir, signal } = options;
  const pieces = splitSentences(text, options.maxPieceChars);
  const totalChars = pieces.reduce((n, p) => n + p.length, 0);
  const textPath = join(workDir, "speech-piece.txt");
  const piecePath = join(workDir, "speech-piece.wav");
  let spokenChars = 0;
  try {
    const { format, dataBytes } = await writePcm(joined, async (write) => {
      let format: PcmFormat | undefined;
      for (const piece of pieces) {
        signal?.throwIfAborted();
        spokenChars += piece.length;
        // text2wave writes an empty file (and exits 0) for a piece with nothing it can say.
        if (synthesizer === "festival" && !festivalCanSpeak(piece)) continue;
        await speakPiece(synthesizer, options.language ?? ESPEAK_VOICE, piece, textPath, piecePath, signal).catch(
          (err: NodeJS.ErrnoException) => {
            if (signal?.aborted) throw signal.reason;
            if (err.code === "ENOENT")
              throw new SynthesizerMissingError(
                `${synthesizer === "festival" ? "text2wave" : "espeak-ng"} is not installed on this worker`,
              );
            throw new Error(`${synthesizer} failed: ${(err.message ?? String(err)).slice(0, 500)}`, { cause: err });
          },
        );
        if ((await stat(piecePath)).size < 44) continue;
        // espeak-ng streams its output and leaves the data size at 0x7fffffff (or 0): the rest of the file is data
        const layout = await readWavLayout(piecePath, { streamed: true });
        if (!layout) throw new Error(`${synthesizer} wrote a file that is not a PCM WAVE file`);
        const { codec, channels, sampleRate } = layout.probe;
        if (codec !== "pcm_s16le") throw new Error(`${synthesizer} wrote ${codec} audio, expected 16-bit PCM`);
        format ??= { audioFormat: 1, channels, sampleRate, bitsPerSample: 16 };
        if (sampleRate !== format.sampleRate || channels !== format.channels)
          throw new Error(`${synthesizer} changed its output format between pieces`);
        if (layout.dataBytes > 0)
          for await (const chunk of createReadStream(piecePath, {
            start: layout.dataOffset,
            end: layout.dataOffset + layout.dataBytes - 1,
          }))
            await write(chunk as Buffer);
        await rm(piecePath, { force: true });
        options.onProgress?.(spokenChars / totalChars);
      }
      return format;
    });
    const frameBytes = (format.channels * format.bitsPerSample) / 8;
    return { pieces: pieces.length, seconds: dataBytes / frameBytes / format.sampleRate };
  } finally {
    await rm(piecePath, { force: true });
    await rm(textPath, { force: true });
  }
}
