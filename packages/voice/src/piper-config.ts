// A Piper voice's config (`<name>.onnx.json`), read and checked without loading the voice: what
// the API and the worker need to know which voices and languages a machine has (piper.ts runs the
// voice itself, with onnxruntime).
import { readFile } from "node:fs/promises";
import { SchemaCheck } from "@mixdown/schema-check";
import { Type, type Static } from "typebox";

/** A file is not a Piper voice Mixdown can run (its config is missing, unreadable or of a kind it does not speak). */
export class PiperVoiceError extends Error {
  override name = "PiperVoiceError";
}

// Its objects take properties beyond those named here: a config carries more than Mixdown reads.
const PiperConfigSchema = Type.Object({
  audio: Type.Object({ sample_rate: Type.Integer({ exclusiveMinimum: 0 }) }),
  espeak: Type.Object({ voice: Type.String({ minLength: 1 }) }),
  language: Type.Optional(Type.Object({ code: Type.String() })),
  inference: Type.Optional(
    Type.Object({
      noise_scale: Type.Optional(Type.Number()),
      length_scale: Type.Optional(Type.Number()),
      noise_w: Type.Optional(Type.Number()),
      phoneme_silence: Type.Optional(Type.Record(Type.String(), Type.Number())),
    }),
  ),
  phoneme_type: Type.Optional(Type.String()),
  phoneme_id_map: Type.Record(Type.String(), Type.Array(Type.Integer())),
  num_speakers: Type.Integer({ exclusiveMinimum: 0 }),
  speaker_id_map: Type.Optional(Type.Record(Type.String(), Type.Integer())),
});
export type PiperConfig = Static<typeof PiperConfigSchema>;

const PIPER_CONFIG_CHECK = new SchemaCheck(PiperConfigSchema);

/** Upstream's defaults where a config leaves them out (config.py, piper.hpp). */
export const PIPER_DEFAULTS = { noiseScale: 0.667, lengthScale: 1, noiseW: 0.8, sentenceSilenceSeconds: 0.2 } as const;

/** The phoneme symbols every voice's phoneme_id_map must have: pad, beginning and end of a sentence. */
export const PAD = "_";
export const BOS = "^";
export const EOS = "$";

/** Reads and checks a voice's `.onnx.json`. */
export async function readPiperConfig(path: string): Promise<PiperConfig> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, "utf8"));
  } catch (err) {
    throw new PiperVoiceError(`${path}: ${(err as Error).message}`);
  }
  if (!PIPER_CONFIG_CHECK.check(raw)) {
    const problems = PIPER_CONFIG_CHECK.problems(raw).map((p) => `${p.path.join(".") || "(top)"}: ${p.message}`);
    throw new PiperVoiceError(`${path} is not a Piper voice config: ${problems.join("; ")}`);
  }
  const config = raw;
  if ((config.phoneme_type ?? "espeak") !== "espeak")
    throw new PiperVoiceError(
      `${path}: phoneme_type ${JSON.stringify(config.phoneme_type)} voices (text "phonemes") are not supported; Mixdown runs espeak voices`,
    );
  for (const symbol of [PAD, BOS, EOS])
    if (!config.phoneme_id_map[symbol]) throw new PiperVoiceError(`${path}: phoneme_id_map has no ${JSON.stringify(symbol)}`);
  return config;
}
