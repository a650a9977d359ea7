import { decodeToPcm, probeAudio, StereoPcmEncoder, type EncodeTarget } from "@mixdown/audio";
import type { SeparationModelEntry } from "@mixdown/separation/catalog";

/** The stems a vocal-split model outputs; the service writes `harmony` and `reverb` and derives the lead. */
export const VOCAL_SPLIT_STEMS = ["lead", "harmony", "reverb"] as const;

/** What turns the vocal split off in SEPARATION_MODEL_VOCAL_SPLIT. */
export const VOCAL_SPLIT_OFF = "none";

/** Whether a model splits a whole vocal into lead, harmony and reverb. */
export function splitsVocals(model: Pick<SeparationModelEntry, "stems">): boolean {
  return VOCAL_SPLIT_STEMS.every((s) => model.stems.includes(s));
}

/**
 * Which vocal-split model the settings name and whether it can run: `model` when installed and
 * able to split, else `reason` says why vocal separations stay at vocals and backing.
 */
export function resolveVocalSplit(
  setting: string,
  installed: readonly Pick<SeparationModelEntry, "name" | "stems">[],
): { model: string; reason?: undefined } | { model?: undefined; reason: string } {
  if (setting === VOCAL_SPLIT_OFF) return { reason: `SEPARATION_MODEL_VOCAL_SPLIT=${VOCAL_SPLIT_OFF}` };
  const model = installed.find((m) => m.name === setting);
  if (!model) return { reason: `the vocal-split model "${setting}" (SEPARATION_MODEL_VOCAL_SPLIT) is not installed` };
  if (!splitsVocals(model))
    return {
      reason: `the model "${setting}" (SEPARATION_MODEL_VOCAL_SPLIT; stems: ${model.stems.join(", ")}) has no lead, harmony and reverb stems`,
    };
  return { model: setting };
}

/**
 * Writes `whole − parts…` to `targets`, block by block. The published lead is what the harmony and
 * reverb leave of the whole vocal rather than the network's own lead output, so the three add up to
 * the whole vocal exactly: the network's masks reach neither the bins above its dimF nor the
 * lowest three, and a lead that lost them would lose them from the sum too. The inputs are this
 * job's lossless files at one rate and length (the parts were separated from the whole).
 */
export async function writeRemainder(
  wholePath: string,
  partPaths: readonly string[],
  targets: EncodeTarget[],
  signal: AbortSignal,
): Promise<void> {
  const { sampleRate } = await probeAudio(wholePath);
  const streams = [wholePath, ...partPaths].map((path) => decodeToPcm(path, { sampleRate, signal }));
  const encoder = new StereoPcmEncoder({ inputSampleRate: sampleRate, targets, signal });
  try {
    for (;;) {
      const blocks = await Promise.all(streams.map((s) => s.next()));
      const [whole, ...parts] = blocks;
      if (whole!.done) {
        if (parts.some((p) => !p.done)) throw new Error("a vocal-split part is longer than the whole vocal");
        break;
      }
      const remainder = whole!.value;
      for (const part of parts) {
        if (part.done || part.value.length !== remainder.length)
          throw new Error("a vocal-split part is shorter than the whole vocal");
        const p = part.value;
        for (let i = 0; i < remainder.length; i++) remainder[i] = remainder[i]! - p[i]!;
      }
      await encoder.write(remainder);
    }
    await encoder.finish();
  } catch (err) {
    await encoder.abort();
    await Promise.all(streams.map((s) => s.return(undefined)));
    throw err;
  }
}
