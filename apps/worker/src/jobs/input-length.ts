import { overDurationLimit, probeAudio, type DurationLimit } from "@mixdown/audio";
import { JobFailure } from "@mixdown/jobs";

/**
 * Fails the job (bad input: no retry) when the downloaded input is longer than the limit. The
 * API refuses such uploads at create; this holds for jobs queued before the limit was lowered,
 * or by anything else that writes a row. Where the container states no length, the count stops
 * just past the limit. A file that does not probe is left to the job's own decode, whose error
 * names the problem. Resolves with the input's length in seconds, when it probed.
 */
export async function checkInputLength(
  path: string,
  limit: DurationLimit,
  what: string,
  signal: AbortSignal,
): Promise<number | undefined> {
  const probe = await probeAudio(path, { countUpToSeconds: limit.seconds, signal }).catch(() => null);
  signal.throwIfAborted();
  const tooLong = probe && overDurationLimit(probe, limit);
  if (tooLong) throw new JobFailure("bad-input", `The ${what} ${tooLong}`);
  return probe && probe.sampleRate > 0 ? probe.frames / probe.sampleRate : undefined;
}
