import type ffmpeg from "fluent-ffmpeg";

/**
 * Bytes buffered on each side of an ffmpeg pipe: the decoder reads this far
 * ahead of its consumer and an encoder's writes queue this much before they
 * wait (a separation chunk step is about 1.5 MB of stereo float32).
 */
export const PIPE_BUFFER_BYTES = 4 << 20;

/** A started fluent-ffmpeg command: `exited` settles when the ffmpeg process is gone. */
export interface FfmpegProcess {
  exited: Promise<void>;
  /** Kills the process; `exited` then rejects. Safe to call more than once or after exit. */
  kill(): void;
  /** The first error reported, if any (set before `exited` rejects). */
  readonly failure: Error | undefined;
}

/** Runs a prepared command (outputs already attached) and tracks its end. */
export function startFfmpeg(command: ffmpeg.FfmpegCommand, onError?: (err: Error) => void): FfmpegProcess {
  let failure: Error | undefined;
  let running = true;
  let killRequested = false;
  // fluent-ffmpeg probes ffmpeg's capabilities before spawning, so a kill can
  // arrive before there is a process to signal
  command.once("start", () => {
    if (killRequested) command.kill("SIGKILL");
  });
  const exited = new Promise<void>((resolve, reject) => {
    command.once("end", () => {
      running = false;
      resolve();
    });
    command.once("error", (err: Error) => {
      running = false;
      failure = err;
      onError?.(err);
      reject(err);
    });
  });
  // Whoever awaits `exited` sees the error; this stops an unobserved rejection
  // from crashing the process when the caller already failed for another reason.
  exited.catch(() => {});
  command.run();
  return {
    exited,
    kill() {
      killRequested = true;
      if (running && (command as unknown as { ffmpegProc?: unknown }).ffmpegProc) command.kill("SIGKILL");
    },
    get failure() {
      return failure;
    },
  };
}
