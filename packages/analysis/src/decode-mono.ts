import { concatSamples, decodeToPcm, type AudioProbe } from "@mixdown/audio";

/**
 * The whole input as mono float32 samples at `sampleRate`: the two channels averaged, as
 * Essentia's MonoLoader mixes them (a mono input is its one channel). Holds the input in memory:
 * 4 bytes a sample, 10.6 MB a minute at 44.1 kHz.
 */
export async function decodeMono(
  path: string,
  options: { sampleRate: number; probe?: AudioProbe; signal?: AbortSignal },
): Promise<Float32Array> {
  const blocks: Float32Array[] = [];
  for await (const stereo of decodeToPcm(path, options)) {
    const mono = new Float32Array(stereo.length / 2);
    for (let i = 0; i < mono.length; i++) mono[i] = (stereo[2 * i] + stereo[2 * i + 1]) / 2;
    blocks.push(mono);
  }
  return concatSamples(blocks, (length) => new Float32Array(length));
}
