import { statfs } from "node:fs/promises";
import type { OutputSpec } from "@mixdown/separation";
import { JobFailure } from "@mixdown/jobs";

/** Bytes one second of one output file takes at most, stereo at `sampleRate` (separation writes 44.1 kHz). */
export function bytesPerSecond(spec: OutputSpec, sampleRate = 44_100): number {
  // a lossless file asked at a rate of its own (output control) takes that rate's samples
  const frames = ((spec.format !== "mp3" ? spec.sampleRate : undefined) ?? sampleRate) * 2;
  switch (spec.format) {
    case "wav":
      return frames * (spec.sampleFormat === "s16" ? 2 : spec.sampleFormat === "s24" ? 3 : 4);
    // FLAC never stores more than the raw samples (plus frame headers)
    case "flac":
      return frames * ((spec.bitDepth ?? 24) / 8) * 1.01;
    case "mp3":
      return ((spec.bitrateKbps ?? 320) * 1000) / 8;
  }
}

/**
 * Fails the attempt before any output is written when the work folder's file system has less
 * room than the job's outputs need (`files` outputs of `seconds` each, in every format of
 * `formats`, plus a tenth): a transient failure, since other jobs ending frees space, with the
 * reason a person can act on. Writing into a disk that fills anyway is still caught (ENOSPC).
 */
export async function checkFreeSpace(
  workDir: string,
  need: { seconds: number; files: number; formats: readonly OutputSpec[]; sampleRate?: number },
): Promise<void> {
  const perFile = need.formats.reduce((sum, spec) => sum + bytesPerSecond(spec, need.sampleRate), 0) * need.seconds;
  const needed = Math.ceil(perFile * need.files * 1.1);
  const fs = await statfs(workDir);
  const free = fs.bavail * fs.bsize;
  if (free < needed)
    throw new JobFailure(
      "transient",
      `The worker's disk has ${megabytes(free)} free in ${workDir} and this job's outputs need about ${megabytes(needed)} ` +
        `(${need.files} files of ${Math.round(need.seconds)} s): free space in TMP_DIR, or lower MAX_SEPARATION_SECONDS / MAX_CONVERSION_SECONDS`,
    );
}

const megabytes = (bytes: number) => `${Math.round(bytes / 1e6)} MB`;
