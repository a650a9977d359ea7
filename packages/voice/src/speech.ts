// Text to speech with the base synthesizers: the text cut into sentences or pieces, each spoken
// (a Piper voice in-process, Festival or espeak-ng as child processes) and appended to one WAV.
// Which synthesizers and languages the machine has is speech-synthesizers.ts, re-exported here.
import { execFile } from "node:child_process";
import { createReadStream, createWriteStream } from "node:fs";
import { open, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { readWavLayout } from "@mixdown/audio";
import { PiperVoice, PiperVoiceError, type PiperConfig } from "./piper.ts";
import {
  ESPEAK_VOICE,
  FESTIVAL_VOICE,
  NothingToSpeakError,
  SynthesizerMissingError,
  type SynthesizerName,
} from "./speech-synthesizers.ts";

export * from "./speech-synthesizers.ts";

const run = promisify(execFile);

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
