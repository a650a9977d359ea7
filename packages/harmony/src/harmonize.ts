import { decodeMono, ESSENTIA_SAMPLE_RATE, estimateKey } from "@mixdown/analysis";
import { concatSamples, decodeToPcm, encodeStereoPcm, type AudioProbe, type EncodeTarget } from "@mixdown/audio";
import { musicalKeyName, parseMusicalKey, type HarmonyDirection, type HarmonyInterval, type MusicalKey } from "@mixdown/jobs";
import { trackPitch } from "@mixdown/voice/pitch";
import { planHarmony, segmentNotes, type HarmonyNote } from "./notes.ts";
import { renderShifted, shiftSegments } from "./render.ts";

/** The pitch track's rate and hop: 10 ms frames of 16 kHz mono, the voice's range (65 Hz to 1 kHz). */
export const PITCH_RATE = 16000;
export const PITCH_HOP = 160;
export const PITCH_RANGE = { fMin: 65, fMax: 1000 } as const;

/** The harmony's level in the mix, under the lead (-4 dB): a backing voice, not a second lead. */
export const HARMONY_MIX_GAIN = 10 ** (-4 / 20);

/** What the harmony of one vocal is asked for: a thread's request (the worker's harmony threads) or this process's. */
export interface HarmonizeRequest {
  /** the vocal to follow (the upload, or its isolated vocal) */
  vocalPath: string;
  /** what the harmony is mixed with: the upload as it came (a mix when its vocal was isolated), at the same rate */
  mixWithPath: string;
  probe: AudioProbe;
  /** the key the caller gave, or null: found in `mixWithPath` with Essentia's KeyExtractor */
  key: MusicalKey | null;
  interval: HarmonyInterval;
  direction: HarmonyDirection;
  /** the harmony alone (one encoder: a lossless file and an mp3 together) */
  harmonyTargets: EncodeTarget[];
  /** the upload with the harmony under it */
  mixTargets: EncodeTarget[];
}

export interface HarmonizeResult {
  /** the key the harmony is in, as the records spell it (`A minor`) */
  key: string;
  keySource: "given" | "found";
  /** KeyExtractor's strength (0-1) when the key was found */
  keyConfidence: number | null;
  /** the sung notes the harmony follows */
  notes: number;
}

/** Why a vocal has no harmony: nothing in it is sung on a pitch, or no key could be found (the input's fault). */
export class HarmonyInputProblem extends Error {
  override readonly name = "HarmonyInputProblem";
}

/**
 * The notes of a vocal (any file ffmpeg reads) and its pitch track, 10 ms frames: what the harmony
 * follows. `range` narrows the tracker to where the notes are known to be (the eval measures a
 * harmony this way, so that YIN's octave errors on a weak fundamental are not counted as misses).
 */
export async function sungNotes(
  path: string,
  options: { signal?: AbortSignal; range?: { fMin: number; fMax: number } } = {},
): Promise<{ f0: Float32Array; notes: ReturnType<typeof segmentNotes> }> {
  const mono = await decodeMono(path, { sampleRate: PITCH_RATE, ...(options.signal ? { signal: options.signal } : {}) });
  const f0 = trackPitch(mono, PITCH_RATE, { hop: PITCH_HOP, ...(options.range ?? PITCH_RANGE) });
  return { f0, notes: segmentNotes(f0) };
}

/**
 * The harmony of one vocal: the key (given, or Essentia's KeyExtractor on the upload), the vocal's
 * pitch track (YIN, 10 ms frames) cut into notes, each note's diatonic target a third or sixth
 * away (`planHarmony`), each note shifted on its own by its amount with formants preserved
 * (`renderShifted`), then the harmony and the mix encoded. Holds the vocal in memory (stereo float:
 * about 21 MB a minute at 44.1 kHz, twice over with the harmony). CPU-bound between its ffmpeg
 * children: run it on a thread (the worker's harmony threads).
 */
export async function harmonizeVocal(
  request: HarmonizeRequest,
  options: { onProgress?: (fraction: number) => void; onNotes?: (notes: HarmonyNote[]) => void; signal?: AbortSignal } = {},
): Promise<HarmonizeResult> {
  const { signal } = options;
  const report = (fraction: number) => options.onProgress?.(Math.min(0.99, fraction));
  let key = request.key;
  let keyConfidence: number | null = null;
  if (!key) {
    const estimate = estimateKey(
      await decodeMono(request.mixWithPath, {
        sampleRate: ESSENTIA_SAMPLE_RATE,
        probe: request.probe,
        ...(signal ? { signal } : {}),
      }),
    );
    key = estimate && parseMusicalKey(`${estimate.key} ${estimate.scale}`);
    if (!key || !estimate)
      throw new HarmonyInputProblem("No key could be found in the input (it is silent); give one with `key`");
    keyConfidence = estimate.confidence;
  }
  report(0.05);
  const { notes } = await sungNotes(request.vocalPath, signal ? { signal } : {});
  if (notes.length === 0) throw new HarmonyInputProblem("No sung note was found in the vocal: the harmony follows pitched notes");
  const plan = planHarmony(notes, key, request.interval, request.direction);
  options.onNotes?.(plan);
  report(0.15);
  const rate = request.probe.sampleRate;
  const read = async (path: string) => {
    const blocks: Float32Array[] = [];
    for await (const block of decodeToPcm(path, { sampleRate: rate, ...(signal ? { signal } : {}) })) blocks.push(block);
    return concatSamples(blocks, (n) => new Float32Array(n));
  };
  const vocal = await read(request.vocalPath);
  const segments = shiftSegments(plan, PITCH_HOP / PITCH_RATE, rate, vocal.length / 2);
  const harmony = await renderShifted(vocal, rate, segments, {
    ...(signal ? { signal } : {}),
    onProgress: (f) => report(0.15 + 0.7 * f),
  });
  await encodeStereoPcm(blocksOf(harmony), {
    inputSampleRate: rate,
    targets: request.harmonyTargets,
    ...(signal ? { signal } : {}),
  });
  const base = request.mixWithPath === request.vocalPath ? vocal : await read(request.mixWithPath);
  await encodeStereoPcm(blocksOf(mixUnder(base, harmony)), {
    inputSampleRate: rate,
    targets: request.mixTargets,
    ...(signal ? { signal } : {}),
  });
  return { key: musicalKeyName(key), keySource: request.key ? "given" : "found", keyConfidence, notes: plan.length };
}

/** `base` with `harmony` under it at `HARMONY_MIX_GAIN`, scaled down as a whole when the sum would clip. */
export function mixUnder(base: Float32Array, harmony: Float32Array): Float32Array {
  const mix = new Float32Array(base.length);
  let peak = 0;
  for (let i = 0; i < mix.length; i++) {
    mix[i] = base[i]! + HARMONY_MIX_GAIN * (harmony[i] ?? 0);
    peak = Math.max(peak, Math.abs(mix[i]!));
  }
  if (peak > 0.99) for (let i = 0; i < mix.length; i++) mix[i] = (mix[i]! * 0.99) / peak;
  return mix;
}

async function* blocksOf(samples: Float32Array): AsyncGenerator<Float32Array> {
  const block = 2 * 65536;
  for (let i = 0; i < samples.length; i += block) yield samples.subarray(i, Math.min(samples.length, i + block));
}
