// A vocal separation's last step: the lead as what the split's parts leave of the whole vocal.
// Imports no onnxruntime (`@mixdown/separation/vocal-split`): the worker's main thread runs it.
import { decodeToPcm, probeAudio, StereoPcmEncoder, type EncodeTarget } from "@mixdown/audio";

/**
 * `whole −= parts…` in place, one part after another in float32 (the order both ways of the split
 * share, so they give the same bytes). Each part is at least `whole`'s length.
 */
export function subtractParts(whole: Float32Array, parts: readonly Float32Array[]): void {
  for (const p of parts) for (let i = 0; i < whole.length; i++) whole[i] = whole[i]! - p[i]!;
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
      for (const part of parts)
        if (part.done || part.value.length !== remainder.length)
          throw new Error("a vocal-split part is shorter than the whole vocal");
      subtractParts(
        remainder,
        parts.map((p) => p.value as Float32Array),
      );
      await encoder.write(remainder);
    }
    await encoder.finish();
  } catch (err) {
    await encoder.abort();
    await Promise.all(streams.map((s) => s.return(undefined)));
    throw err;
  }
}
