import { spawn } from "node:child_process";

export interface ToolRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** stopped at its time limit */
  timedOut: boolean;
  /** stopped by the caller's AbortSignal */
  aborted: boolean;
  /** The last line the tool wrote to stderr, without the file's path: callers pass it on to people who uploaded the file. */
  lastError: string;
  /** The last 2000 characters of stderr (what a filter such as loudnorm prints at the end). */
  stderrTail: string;
}

/**
 * Runs ffprobe or ffmpeg on `filePath` as a child process (never on the event loop), killed at
 * `timeoutMs` or when `signal` aborts. Stdout goes to `onStdout` as it comes; only the tail of
 * stderr is kept.
 */
export function runTool(
  tool: string,
  filePath: string,
  args: string[],
  limits: { timeoutMs?: number; signal?: AbortSignal | undefined },
  onStdout: (chunk: string) => void,
): Promise<ToolRun> {
  return new Promise((resolve, reject) => {
    if (limits.signal?.aborted) {
      resolve({ code: null, signal: null, timedOut: false, aborted: true, lastError: "", stderrTail: "" });
      return;
    }
    const child = spawn(tool, args, { stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    let timedOut = false;
    let aborted = false;
    const timer =
      limits.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill("SIGKILL");
          }, limits.timeoutMs);
    const onAbort = () => {
      aborted = true;
      child.kill("SIGKILL");
    };
    limits.signal?.addEventListener("abort", onAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      limits.signal?.removeEventListener("abort", onAbort);
    };
    child.stdout.setEncoding("utf8").on("data", onStdout);
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-2000)));
    child.on("error", (error) => {
      done();
      reject(error);
    });
    child.on("close", (code, signal) => {
      done();
      const lastLine = err.trim().split("\n").pop() ?? "";
      resolve({
        code,
        signal,
        timedOut,
        aborted,
        lastError: lastLine.replaceAll(`${filePath}: `, "").replaceAll(filePath, "the file"),
        stderrTail: err,
      });
    });
  });
}
