import { readFileSync } from "node:fs";
import { PassThrough } from "node:stream";
import ffmpeg from "fluent-ffmpeg";
import { AudioDecodeError } from "./errors.ts";
import { startFfmpeg } from "./ffmpeg-process.ts";

/**
 * Decodes the input once at its own rate and counts the frames: the exact
 * length for lossy inputs, whose containers only give an estimate, and the
 * only one for streams whose container states none. Memory stays flat: the
 * decoded audio is counted as it passes, never kept.
 */
export function countDecodedFrames(path: string, signal?: AbortSignal): Promise<number> {
  return decodeCounting(path, signal);
}

/**
 * countDecodedFrames within `timeoutMs` of the decoder's own CPU time (no limit when undefined).
 * CPU time, not wall time: on a loaded machine the decoder gets a fraction of a core, and a wall
 * clock would turn valid audio into an error there; the CPU it may spend is what the limit bounds.
 * Wall time is still capped at `WALL_FACTOR` times the limit, and where the process's CPU time
 * cannot be read (no /proc) the limit is wall time. `complete` is false when the limit ended the
 * count after audio came out: `frames` is then a lower bound. Rejects with AudioDecodeError when
 * the stream does not decode, or when the limit struck before any audio came out.
 */
export async function countDecodedFramesWithin(
  path: string,
  timeoutMs: number | undefined,
  signal?: AbortSignal,
  upToSeconds?: number,
): Promise<{ frames: number; complete: boolean }> {
  if (timeoutMs === undefined) return { frames: await decodeCounting(path, signal, undefined, upToSeconds), complete: true };
  const limit = new AbortController();
  const strike = () => limit.signal.aborted || limit.abort(new Error("time limit"));
  const wall = setTimeout(strike, timeoutMs * WALL_FACTOR);
  let pid: number | undefined;
  let cpuReadable = true;
  const startedAt = Date.now();
  const poll = setInterval(() => {
    const cpu = pid === undefined ? undefined : processCpuMs(pid);
    if (pid !== undefined && cpu === undefined) cpuReadable = false;
    if (cpuReadable ? cpu !== undefined && cpu >= timeoutMs : Date.now() - startedAt >= timeoutMs) strike();
  }, CPU_POLL_MS);
  let seen = 0;
  try {
    const frames = await decodeCounting(
      path,
      signal ? AbortSignal.any([signal, limit.signal]) : limit.signal,
      (n) => (seen = n),
      upToSeconds,
      (started) => (pid = started),
    );
    return { frames, complete: true };
  } catch (err) {
    if (!limit.signal.aborted || signal?.aborted) throw err;
    if (seen > 0) return { frames: seen, complete: false };
    throw new AudioDecodeError(path, `no audio decoded within ${Math.round(timeoutMs / 1000)} s of decoding`);
  } finally {
    clearTimeout(wall);
    clearInterval(poll);
  }
}

/** How much longer than its CPU limit a count may take by the clock, however loaded the machine. */
export const WALL_FACTOR = 10;
const CPU_POLL_MS = 20;

/** user + system CPU time of a running process in ms, from /proc (undefined where unreadable: gone, not Linux). */
function processCpuMs(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}
/** USER_HZ: 100 on every Linux ABI Node runs on. */
const CLOCK_TICKS = 100;

async function decodeCounting(
  path: string,
  signal?: AbortSignal,
  onCount?: (frames: number) => void,
  upToSeconds?: number,
  onStart?: (pid: number) => void,
): Promise<number> {
  signal?.throwIfAborted();
  const sink = new PassThrough({ autoDestroy: false });
  let bytes = 0;
  sink.on("data", (chunk: Buffer) => {
    bytes += chunk.length;
    onCount?.(bytes);
  });
  // one byte per frame keeps the pipe small
  const command = ffmpeg(path)
    .inputOptions(["-nostdin", "-hide_banner"])
    .outputOptions([
      "-map",
      "0:a:0",
      "-vn",
      "-sn",
      "-dn",
      "-ac",
      "1",
      "-c:a",
      "pcm_u8",
      // a little past the limit, so that a file longer than it is counted as longer
      ...(upToSeconds !== undefined ? ["-t", String(upToSeconds + 1)] : []),
    ])
    .format("u8")
    .output(sink, { end: true });
  if (onStart)
    command.once("start", () => {
      const pid = (command as unknown as { ffmpegProc?: { pid?: number } }).ffmpegProc?.pid;
      if (pid !== undefined) onStart(pid);
    });
  const counter = startFfmpeg(command);
  const onAbort = () => counter.kill();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await counter.exited;
    if (!sink.readableEnded) await new Promise((resolve) => sink.once("end", resolve));
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw new AudioDecodeError(path, lastLineWithoutPath((err as Error).message, path), { cause: err });
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  return bytes;
}

/** ffmpeg's own last word on the failure, without the file's path: the reason reaches uploaders. */
function lastLineWithoutPath(message: string, path: string): string {
  const line = message.trim().split("\n").filter(Boolean).pop() ?? message;
  return line.replaceAll(`${path}: `, "").replaceAll(path, "the file");
}
