import { overDurationLimit, probeAudio, type AudioProbe, type DurationLimit } from "@mixdown/audio";
import { JobFailure } from "@mixdown/jobs";
import type { ObjectStorage } from "@mixdown/storage";

/**
 * Fails the job (bad input: no retry) when the downloaded input is longer than the limit. The
 * API refuses such uploads at create; this holds for jobs queued before the limit was lowered,
 * or by anything else that writes a row. Where the container states no length, the count stops
 * just past the limit. A file that does not probe is left to the job's own decode, whose error
 * names the problem. Resolves with the input's probe, when it probed: the job's decode takes it
 * rather than probing (and, for a stream, counting) the file again.
 */
export async function checkInputLength(
  path: string,
  limit: DurationLimit,
  what: string,
  signal: AbortSignal,
): Promise<AudioProbe | undefined> {
  const probe = await probeAudio(path, { countUpToSeconds: limit.seconds, signal }).catch(() => null);
  signal.throwIfAborted();
  const tooLong = probe && overDurationLimit(probe, limit);
  if (tooLong) throw new JobFailure("bad-input", `The ${what} ${tooLong}`);
  return probe && probe.sampleRate > 0 ? probe : undefined;
}

/** A probe's length in seconds. */
export const probeSeconds = (probe: AudioProbe | undefined): number | undefined =>
  probe ? probe.frames / probe.sampleRate : undefined;

/**
 * Downloads an upload to `path` and checks its length (`checkInputLength`); one with no audio
 * stream fails the job (bad input), as `named` ("The uploaded file", "targetFile") says.
 */
export async function fetchCheckedInput(
  storage: ObjectStorage,
  key: string,
  path: string,
  check: { limit: DurationLimit; what: string; named: string },
  signal: AbortSignal,
): Promise<AudioProbe> {
  await storage.downloadToFile(key, path);
  signal.throwIfAborted();
  const probe = await checkInputLength(path, check.limit, check.what, signal);
  if (!probe) throw new JobFailure("bad-input", `${check.named} has no audio stream`);
  return probe;
}

/** An upload checked as a separation's is: MAX_SEPARATION_SECONDS long at most. */
export const separationInput = (seconds: number) => ({
  limit: { seconds, setting: "MAX_SEPARATION_SECONDS" },
  what: "input",
  named: "The uploaded file",
});
