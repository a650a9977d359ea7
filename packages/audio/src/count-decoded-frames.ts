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
 * countDecodedFrames within `timeoutMs` (no limit when undefined). `complete` is false when the
 * limit ended the count after audio came out: `frames` is then a lower bound. Rejects with
 * AudioDecodeError when the stream does not decode, or when the limit struck before any audio
 * came out.
 */
export async function countDecodedFramesWithin(
  path: string,
  timeoutMs: number | undefined,
  signal?: AbortSignal,
  upToSeconds?: number,
): Promise<{ frames: number; complete: boolean }> {
  if (timeoutMs === undefined) return { frames: await decodeCounting(path, signal, undefined, upToSeconds), complete: true };
  const limit = new AbortController();
  const timer = setTimeout(() => limit.abort(new Error("time limit")), timeoutMs);
  let seen = 0;
  try {
    const frames = await decodeCounting(
      path,
      signal ? AbortSignal.any([signal, limit.signal]) : limit.signal,
      (n) => (seen = n),
      upToSeconds,
    );
    return { frames, complete: true };
  } catch (err) {
    if (!limit.signal.aborted || signal?.aborted) throw err;
    if (seen > 0) return { frames: seen, complete: false };
    throw new AudioDecodeError(path, `no audio decoded within ${Math.round(timeoutMs / 1000)} s`);
  } finally {
    clearTimeout(timer);
  }
}

async function decodeCounting(
  path: string,
  signal?: AbortSignal,
  onCount?: (frames: number) => void,
  upToSeconds?: number,
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
