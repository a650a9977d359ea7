import { spawn } from "node:child_process";

export interface ProbeResult {
  /** ffprobe's format_name, e.g. `wav`, `mp3`, `flac`, `matroska,webm`. */
  formatName: string;
  durationSeconds: number;
  audioStreams: number;
  codec: string | null;
}

export class ProbeError extends Error {}

interface ToolRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** true when the run was stopped at its time limit */
  timedOut: boolean;
  /** the last line ffmpeg/ffprobe wrote to stderr, without the file's path (it goes into 422 bodies) */
  lastError: string;
}

/** Runs ffprobe or ffmpeg on `filePath` as a child process (never on the event loop), stopped at `timeoutMs`. */
function runTool(path: string, filePath: string, args: string[], timeoutMs: number, onStdout: (chunk: string) => void): Promise<ToolRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(path, args, { stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.stdout.setEncoding("utf8").on("data", onStdout);
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-2000)));
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const lastLine = err.trim().split("\n").pop() ?? "";
      resolve({ code, signal, timedOut, lastError: lastLine.replaceAll(`${filePath}: `, "").replaceAll(filePath, "the file") });
    });
  });
}

function failure(tool: string, run: ToolRun): ProbeError {
  return new ProbeError(run.lastError || `${tool} ${run.signal ? `stopped by ${run.signal}` : `exited with ${run.code}`}`);
}

/**
 * Runs ffprobe on a file; rejects with ProbeError when ffprobe cannot read it at all.
 * `durationSeconds` is 0 when the container states no duration: see `decodedDuration`.
 */
export async function probeAudio(filePath: string, ffprobePath = "ffprobe", timeoutMs = 30_000): Promise<ProbeResult> {
  let out = "";
  const run = await runTool(
    ffprobePath,
    filePath,
    ["-v", "error", "-print_format", "json", "-show_entries", "format=format_name,duration:stream=codec_type,codec_name,duration", filePath],
    timeoutMs,
    (d) => (out += d),
  );
  if (run.timedOut) throw new ProbeError("ffprobe took too long");
  if (run.code !== 0) throw failure("ffprobe", run);
  let json: { format?: { format_name?: string; duration?: string }; streams?: Array<{ codec_type?: string; codec_name?: string; duration?: string }> };
  try {
    json = JSON.parse(out);
  } catch (error) {
    throw new ProbeError(`unreadable ffprobe output: ${(error as Error).message}`);
  }
  const audio = (json.streams ?? []).filter((s) => s.codec_type === "audio");
  const durations = [json.format?.duration, ...audio.map((s) => s.duration)]
    .map((d) => Number(d))
    .filter((d) => Number.isFinite(d));
  return {
    formatName: json.format?.format_name ?? "",
    durationSeconds: durations.length ? Math.max(...durations) : 0,
    audioStreams: audio.length,
    codec: audio[0]?.codec_name ?? null,
  };
}

/**
 * How long a decode of a file of `bytes` may take. Opus at 32 kbps, the most audio per byte a
 * recorder writes, decodes at about 2 MB/s on one loaded core of a 2-core machine (FLAC and Vorbis
 * at over 10 MB/s), so 1 s per MB leaves a 2x margin: 55 s for a 50 MB upload.
 */
export function decodeTimeLimitMs(bytes: number): number {
  return 5_000 + Math.ceil(bytes / 1_000_000) * 1_000;
}

/**
 * Seconds of audio in the first audio stream, for containers that do not state them (FLAC written
 * to a pipe leaves STREAMINFO's total samples 0; a browser's MediaRecorder writes WebM without a
 * Duration element). Counted by decoding it to ffmpeg's null muxer:
 * nothing is buffered, ffmpeg reports its output time as it goes. When the time limit stops a
 * long decode after audio came out, the file has audio; that much is returned (a lower bound),
 * so a slow machine does not turn valid audio into a 422. Rejects with ProbeError when ffmpeg
 * cannot decode the stream.
 */
export async function decodedDuration(filePath: string, timeoutMs: number, ffmpegPath = "ffmpeg"): Promise<number> {
  let latestUs = 0;
  let partial = "";
  const run = await runTool(
    ffmpegPath,
    filePath,
    ["-nostdin", "-hide_banner", "-v", "error", "-i", filePath, "-map", "0:a:0", "-vn", "-sn", "-dn", "-f", "null", "-progress", "pipe:1", "-nostats", "-"],
    timeoutMs,
    (chunk) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        const match = /^out_time_us=(\d+)$/.exec(line.trim());
        if (match) latestUs = Math.max(latestUs, Number(match[1]));
      }
    },
  );
  if (run.timedOut && latestUs === 0) throw new ProbeError(`no audio decoded within ${Math.round(timeoutMs / 1000)} s`);
  if (!run.timedOut && run.code !== 0) throw failure("ffmpeg", run);
  return latestUs / 1e6;
}
