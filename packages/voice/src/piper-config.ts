// A Piper voice's config (`<name>.onnx.json`), read and checked without loading the voice: what
// the API and the worker need to know which voices and languages a machine has (piper.ts runs the
// voice itself, with onnxruntime).
import { readFile } from "node:fs/promises";
import { z } from "zod";

/** A file is not a Piper voice Mixdown can run (its config is missing, unreadable or of a kind it does not speak). */
export class PiperVoiceError extends Error {
  override name = "PiperVoiceError";
}

const PiperConfigSchema = z.looseObject({
  audio: z.looseObject({ sample_rate: z.number().int().positive() }),
  espeak: z.looseObject({ voice: z.string().min(1) }),
  language: z.looseObject({ code: z.string() }).optional(),
  inference: z
    .looseObject({
      noise_scale: z.number().optional(),
      length_scale: z.number().optional(),
      noise_w: z.number().optional(),
      phoneme_silence: z.record(z.string(), z.number()).optional(),
    })
    .optional(),
  phoneme_type: z.string().optional(),
  phoneme_id_map: z.record(z.string(), z.array(z.number().int())),
  num_speakers: z.number().int().positive(),
  speaker_id_map: z.record(z.string(), z.number().int()).optional(),
});
export type PiperConfig = z.infer<typeof PiperConfigSchema>;

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
  const parsed = PiperConfigSchema.safeParse(raw);
  if (!parsed.success)
    throw new PiperVoiceError(
      `${path} is not a Piper voice config: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(top)"}: ${i.message}`).join("; ")}`,
    );
  const config = parsed.data;
  if ((config.phoneme_type ?? "espeak") !== "espeak")
    throw new PiperVoiceError(
      `${path}: phoneme_type ${JSON.stringify(config.phoneme_type)} voices (text "phonemes") are not supported; Mixdown runs espeak voices`,
    );
  for (const symbol of [PAD, BOS, EOS])
    if (!config.phoneme_id_map[symbol]) throw new PiperVoiceError(`${path}: phoneme_id_map has no ${JSON.stringify(symbol)}`);
  return config;
}
