import { spawn } from "node:child_process";
import { AudioDecodeError } from "@mixdown/audio";

/** EBU R128 / ITU-R BS.1770-4 measures of a whole input, as ffmpeg's `ebur128` filter reports them (0.1 resolution). */
export interface Loudness {
  /** Integrated loudness, LUFS; null when nothing passes the -70 LUFS absolute gate (silence). */
  integratedLufs: number | null;
  /** Loudness range (EBU Tech 3342), LU. */
  loudnessRangeLu: number;
  /** The highest true peak over the channels (4x oversampled, BS.1770-4 Annex 2), dBTP; null for digital silence. */
  truePeakDbtp: number | null;
}

/** A value of the filter's summary: `-inf` (nothing measured) is null. */
function summaryValue(summary: string, label: string, unit: string): number | null {
  const match = new RegExp(`${label}:\\s+(-?inf|nan|-?\\d+(?:\\.\\d+)?) ${unit}`).exec(summary);
  if (!match) throw new Error(`ffmpeg's ebur128 summary has no ${label} (${unit})`);
  const value = Number(match[1]);
  return Number.isFinite(value) ? value : null;
}

/** Reads the summary ffmpeg's `ebur128` filter logs at the end of its run. */
export function parseEbur128Summary(stderr: string): Loudness {
  const at = stderr.lastIndexOf("Summary:");
  if (at < 0) throw new Error("ffmpeg's ebur128 filter printed no summary");
  const summary = stderr.slice(at);
  const integrated = summaryValue(summary, "I", "LUFS");
  return {
    // the filter reports -70.0 when every block is gated out
    integratedLufs: integrated !== null && integrated > -70 ? integrated : null,
    loudnessRangeLu: summaryValue(summary, "LRA", "LU") ?? 0,
    truePeakDbtp: summaryValue(summary, "Peak", "dBFS"),
  };
}

/**
 * Measures the first audio stream of `path` with ffmpeg's `ebur128=peak=true` filter, at the
 * input's own rate and channels (the filter oversamples for the true peak itself). A child
 * process, killed when `signal` aborts.
 */
export function measureLoudness(path: string, signal?: AbortSignal): Promise<Loudness> {
  signal?.throwIfAborted();
  const args = [
    "-hide_banner",
    "-nostats",
    "-nostdin",
    "-i",
    path,
    "-map",
    "0:a:0",
    "-af",
    "ebur128=peak=true",
    "-f",
    "null",
    "-",
  ];
  return new Promise((resolve, reject) => {
    const child = spawn("ffmpeg", args, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    const onAbort = () => child.kill("SIGKILL");
    signal?.addEventListener("abort", onAbort, { once: true });
    // the summary is the last ~500 bytes; the head is kept for a decode error's first line
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-8000)));
    child.on("error", (err) => {
      signal?.removeEventListener("abort", onAbort);
      reject(err);
    });
    child.on("close", (code) => {
      signal?.removeEventListener("abort", onAbort);
      if (signal?.aborted) return reject(signal.reason);
      if (code !== 0) {
        const last = stderr.trim().split("\n").pop() ?? "";
        return reject(new AudioDecodeError(path, last.replaceAll(`${path}: `, "").replaceAll(path, "the file")));
      }
      try {
        resolve(parseEbur128Summary(stderr));
      } catch (err) {
        reject(err);
      }
    });
  });
}
