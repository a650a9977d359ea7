import { spawn } from "node:child_process";

export interface ProbeResult {
  /** ffprobe's format_name, e.g. `wav`, `mp3`, `flac`, `matroska,webm`. */
  formatName: string;
  durationSeconds: number;
  audioStreams: number;
  codec: string | null;
}

export class ProbeError extends Error {}

/** Runs ffprobe on a file; rejects with ProbeError when ffprobe cannot read it at all. */
export function probeAudio(filePath: string, ffprobePath = "ffprobe", timeoutMs = 30_000): Promise<ProbeResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      ffprobePath,
      ["-v", "error", "-print_format", "json", "-show_entries", "format=format_name,duration:stream=codec_type,codec_name,duration", filePath],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    let err = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-2000)));
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (signal) return reject(new ProbeError(`ffprobe stopped by ${signal}`));
      if (code !== 0) return reject(new ProbeError(err.trim().split("\n").pop() || `ffprobe exited with ${code}`));
      try {
        const json = JSON.parse(out) as {
          format?: { format_name?: string; duration?: string };
          streams?: Array<{ codec_type?: string; codec_name?: string; duration?: string }>;
        };
        const audio = (json.streams ?? []).filter((s) => s.codec_type === "audio");
        const durations = [json.format?.duration, ...audio.map((s) => s.duration)]
          .map((d) => Number(d))
          .filter((d) => Number.isFinite(d));
        resolve({
          formatName: json.format?.format_name ?? "",
          durationSeconds: durations.length ? Math.max(...durations) : 0,
          audioStreams: audio.length,
          codec: audio[0]?.codec_name ?? null,
        });
      } catch (error) {
        reject(new ProbeError(`unreadable ffprobe output: ${(error as Error).message}`));
      }
    });
  });
}
