// Piper voices (github.com/rhasspy/piper): a VITS model exported to ONNX (`<name>.onnx`) and its
// config (`<name>.onnx.json`), speaking espeak-ng phonemes. Mixdown runs them as the piper binary
// does (src/cpp/piper.cpp): the text is phonemized by piper-phonemize (its own espeak-ng fork,
// here the npm `piper-phonemize` WebAssembly build), one sentence at a time; each sentence's
// phonemes become ids by the voice's phoneme_id_map (phonemes_to_ids: BOS, pad, each phoneme
// followed by pad, EOS), the model speaks them, and its float output is scaled to int16 by the
// sentence's peak; a sentence ends with 0.2 s of silence. packages/voice/scripts/piper-reference
// holds the comparison with upstream's own code.
import { createRequire } from "node:module";
import { ort } from "@mixdown/separation/ort";
import { concatSamples } from "@mixdown/audio";
import { BOS, EOS, PAD, PIPER_DEFAULTS, PiperVoiceError, readPiperConfig, type PiperConfig } from "./piper-config.ts";

export { PIPER_DEFAULTS, PiperVoiceError, readPiperConfig, type PiperConfig } from "./piper-config.ts";

interface PiperPhonemize {
  phonemize(text: string, voice: string): number[][] | null;
}
let phonemizer: PiperPhonemize | undefined;
/** The WebAssembly phonemizer, loaded on first use (it reads espeak-ng's data, ~19 MB, once). */
function piperPhonemize(): PiperPhonemize {
  return (phonemizer ??= createRequire(import.meta.url)("piper-phonemize") as PiperPhonemize);
}

/**
 * The text as espeak-ng phonemes, one array of code points per sentence, as piper-phonemize's
 * phonemize_eSpeak gives them (clause punctuation kept, language-switch flags removed, NFD).
 */
export function phonemizeEspeak(text: string, voice: string): number[][] {
  const sentences = piperPhonemize().phonemize(text, voice);
  if (!sentences) throw new PiperVoiceError(`espeak-ng has no voice ${JSON.stringify(voice)}`);
  return sentences;
}

/** Phoneme (one code point) -> ids, from a config's phoneme_id_map (keys of one code point only, as upstream reads it). */
export function phonemeIdMap(config: PiperConfig): Map<number, number[]> {
  const map = new Map<number, number[]>();
  for (const [key, ids] of Object.entries(config.phoneme_id_map)) {
    const points = [...key];
    if (points.length === 1) map.set(points[0]!.codePointAt(0)!, ids);
  }
  return map;
}

/**
 * piper-phonemize's phonemes_to_ids (what piper_train trained on and the piper binary feeds):
 * BOS, pad, then each phoneme's ids followed by pad, then EOS. A phoneme the map lacks is left
 * out and counted in `missing`.
 */
export function phonemesToIds(phonemes: readonly number[], map: Map<number, number[]>, missing?: Map<number, number>): number[] {
  const pad = map.get(PAD.codePointAt(0)!)!;
  const ids = [...map.get(BOS.codePointAt(0)!)!, ...pad];
  for (const phoneme of phonemes) {
    const mapped = map.get(phoneme);
    if (!mapped) {
      missing?.set(phoneme, (missing.get(phoneme) ?? 0) + 1);
      continue;
    }
    ids.push(...mapped, ...pad);
  }
  ids.push(...map.get(EOS.codePointAt(0)!)!);
  return ids;
}

/**
 * The model's float output as the piper binary writes it: scaled so the peak (at least 0.01)
 * reaches 32767, clamped, and truncated to int16, in float32 arithmetic as upstream does it.
 */
export function piperToInt16(audio: Float32Array): Int16Array {
  let peak = 0.01;
  for (const v of audio) peak = Math.max(peak, Math.abs(v));
  const scale = Math.fround(32767 / Math.fround(peak));
  const out = new Int16Array(audio.length);
  for (let i = 0; i < audio.length; i++) out[i] = Math.trunc(Math.min(32767, Math.max(-32768, Math.fround(audio[i]! * scale))));
  return out;
}

export interface PiperSpeakOptions {
  /** A multi-speaker voice's speaker (its id, or a name of speaker_id_map); speaker 0 when absent. */
  speaker?: number | string;
  noiseScale?: number;
  lengthScale?: number;
  noiseW?: number;
  /** Silence after each sentence (the piper binary's --sentence_silence, 0.2 s). */
  sentenceSilenceSeconds?: number;
  signal?: AbortSignal;
  /** Fraction of the sentences spoken, after each (speak). */
  onProgress?: (fraction: number) => void;
}

/** A sentence longer than this many phonemes is spoken in parts cut at its clause ends, else at spaces (memory: VITS attends over the whole sentence). */
export const MAX_SENTENCE_PHONEMES = 800;

/** A sentence's phonemes cut into parts of at most `max`, after clause punctuation where there is one, else after a space. */
export function cutSentence(phonemes: number[], max: number): number[][] {
  const parts: number[][] = [];
  let rest = phonemes;
  const space = 0x20;
  const clause = new Set([",", ":", ";"].map((c) => c.codePointAt(0)!));
  while (rest.length > max) {
    let at = -1;
    for (let i = max - 1; i > max / 4 && at < 0; i--) if (clause.has(rest[i]!) && rest[i + 1] === space) at = i + 2;
    for (let i = max - 1; i > max / 4 && at < 0; i--) if (rest[i] === space) at = i + 1;
    if (at < 0) at = max;
    parts.push(rest.slice(0, at));
    rest = rest.slice(at);
  }
  parts.push(rest);
  return parts;
}

/** A loaded Piper voice. */
export class PiperVoice {
  readonly idMap: Map<number, number[]>;
  /** Phonemes the map lacked, over this voice's life (upstream logs them). */
  readonly missingPhonemes = new Map<number, number>();

  private constructor(
    readonly config: PiperConfig,
    private readonly session: ort.InferenceSession,
  ) {
    this.idMap = phonemeIdMap(config);
  }

  get sampleRate(): number {
    return this.config.audio.sample_rate;
  }

  /** The espeak-ng voice it speaks (`en-us`, `de`, ...). */
  get espeakVoice(): string {
    return this.config.espeak.voice;
  }

  /**
   * Loads `<name>.onnx` and its config: `config` where the caller has read it already
   * (readPiperConfig), else the file `configPath` (`<name>.onnx.json` unless given).
   */
  static async load(
    modelPath: string,
    options: { configPath?: string; config?: PiperConfig; session?: ort.InferenceSession.SessionOptions } = {},
  ): Promise<PiperVoice> {
    const config = options.config ?? (await readPiperConfig(options.configPath ?? `${modelPath}.json`));
    const session = await ort.InferenceSession.create(modelPath, { graphOptimizationLevel: "all", ...options.session }).catch(
      (err: Error) => {
        throw new PiperVoiceError(`${modelPath} is not a model onnxruntime can load: ${err.message}`);
      },
    );
    for (const name of ["input", "input_lengths", "scales"])
      if (!session.inputNames.includes(name))
        throw new PiperVoiceError(`${modelPath} is not a Piper voice: it has no input ${JSON.stringify(name)}`);
    return new PiperVoice(config, session);
  }

  /** The speaker id `speaker` names, for a multi-speaker voice; undefined for a single-speaker one. */
  speakerId(speaker?: number | string): number | undefined {
    if (this.config.num_speakers <= 1) return undefined;
    if (speaker === undefined) return 0;
    const id = typeof speaker === "number" ? speaker : this.config.speaker_id_map?.[speaker];
    if (id === undefined || !Number.isInteger(id) || id < 0 || id >= this.config.num_speakers)
      throw new PiperVoiceError(
        `speaker ${JSON.stringify(speaker)} is not one of this voice's ${this.config.num_speakers} speakers`,
      );
    return id;
  }

  /** The model's output for one run of phoneme ids, float, before scaling. */
  async synthesizeIds(ids: readonly number[], options: PiperSpeakOptions = {}): Promise<Float32Array> {
    const inference = this.config.inference ?? {};
    const scales = Float32Array.of(
      options.noiseScale ?? inference.noise_scale ?? PIPER_DEFAULTS.noiseScale,
      options.lengthScale ?? inference.length_scale ?? PIPER_DEFAULTS.lengthScale,
      options.noiseW ?? inference.noise_w ?? PIPER_DEFAULTS.noiseW,
    );
    const feeds: Record<string, ort.Tensor> = {
      input: new ort.Tensor(
        "int64",
        BigInt64Array.from(ids, (id) => BigInt(id)),
        [1, ids.length],
      ),
      input_lengths: new ort.Tensor("int64", BigInt64Array.of(BigInt(ids.length)), [1]),
      scales: new ort.Tensor("float32", scales, [3]),
    };
    const sid = this.speakerId(options.speaker);
    if (sid !== undefined) feeds.sid = new ort.Tensor("int64", BigInt64Array.of(BigInt(sid)), [1]);
    const result = await this.session.run(feeds);
    const output = result[this.session.outputNames[0]!]!;
    try {
      return Float32Array.from(output.data as Float32Array);
    } finally {
      output.dispose();
    }
  }

  /**
   * Speaks `text` as the piper binary does, yielding each sentence's int16 samples (its phrases,
   * phoneme_silence, and the sentence silence after it) as soon as it is spoken.
   */
  async *speak(text: string, options: PiperSpeakOptions = {}): AsyncGenerator<Int16Array> {
    const silenceAfter = new Map<number, number>();
    for (const [phoneme, seconds] of Object.entries(this.config.inference?.phoneme_silence ?? {})) {
      const points = [...phoneme];
      if (points.length !== 1) throw new PiperVoiceError("Phonemes must be one codepoint (phoneme silence)");
      silenceAfter.set(points[0]!.codePointAt(0)!, Math.trunc(seconds * this.sampleRate));
    }
    const sentenceSilence = Math.trunc(
      (options.sentenceSilenceSeconds ?? PIPER_DEFAULTS.sentenceSilenceSeconds) * this.sampleRate,
    );
    const sentences = phonemizeEspeak(text, this.espeakVoice);
    for (const [index, sentence] of sentences.entries()) {
      options.signal?.throwIfAborted();
      // Phrases end at a phoneme with silence after it (inference.phoneme_silence), as upstream splits them.
      const phrases: { phonemes: number[]; silence: number }[] = [{ phonemes: [], silence: 0 }];
      for (const phoneme of sentence) {
        phrases.at(-1)!.phonemes.push(phoneme);
        const silence = silenceAfter.get(phoneme);
        if (silence !== undefined) {
          phrases.at(-1)!.silence = silence;
          phrases.push({ phonemes: [], silence: 0 });
        }
      }
      const parts: Int16Array[] = [];
      for (const phrase of phrases) {
        if (phrase.phonemes.length === 0) continue;
        for (const piece of cutSentence(phrase.phonemes, MAX_SENTENCE_PHONEMES)) {
          const audio = await this.synthesizeIds(phonemesToIds(piece, this.idMap, this.missingPhonemes), options);
          parts.push(piperToInt16(audio));
        }
        if (phrase.silence > 0) parts.push(new Int16Array(phrase.silence));
      }
      if (sentenceSilence > 0) parts.push(new Int16Array(sentenceSilence));
      yield concatSamples(parts, (n) => new Int16Array(n));
      options.onProgress?.((index + 1) / sentences.length);
    }
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
