import { join } from "node:path";
import type { EncodeTarget } from "@mixdown/audio";

/**
 * The files one output is written to in `workDir`, by one encoder: `<name>.<lossless>` (WAV, or
 * 24-bit FLAC) and `<name>.mp3` at the worker's bitrate.
 */
export function losslessAndMp3(
  workDir: string,
  name: string,
  output: { losslessFormat: "wav" | "flac"; lossyBitrateKbps: number },
): { targets: EncodeTarget[]; files: [lossless: string, lossy: string] } {
  const lossless = join(workDir, `${name}.${output.losslessFormat}`);
  const lossy = join(workDir, `${name}.mp3`);
  return {
    targets: [
      output.losslessFormat === "flac" ? { format: "flac", path: lossless, bitDepth: 24 } : { format: "wav", path: lossless },
      { format: "mp3", path: lossy, bitrateKbps: output.lossyBitrateKbps },
    ],
    files: [lossless, lossy],
  };
}
