import { MultiBar, type SingleBar } from "cli-progress";

interface Output {
  write(text: string): unknown;
  isTTY?: boolean;
}

/** What a `mixdown separate` run shows on stderr while it works through its files. */
export interface RunProgress {
  /** a file begins: `index` of `total` (1-based) */
  start(index: number, total: number, label: string): void;
  /** the file's separation so far, in [0, 1] */
  update(fraction: number): void;
  /** a line of its own (a file's end, a skip, a failure) */
  line(text: string): void;
  stop(): void;
}

/** On a terminal: two bars (all files, this file) with lines above them. */
function terminalProgress(stderr: Output): RunProgress {
  const bars = new MultiBar({
    stream: stderr as NodeJS.WritableStream,
    hideCursor: true,
    clearOnComplete: true,
    barsize: 24,
    format: "{label} [{bar}] {percentage}% {detail}",
  });
  let overall: SingleBar | undefined;
  let current: SingleBar | undefined;
  let position = { index: 0, total: 0 };
  const units = 1000;
  return {
    start(index, total, label) {
      position = { index, total };
      overall ??= bars.create(total * units, 0, { label: "all files", detail: "" });
      overall.update((index - 1) * units, { detail: `${index}/${total}` });
      if (current) bars.remove(current);
      current = bars.create(units, 0, { label, detail: "" });
    },
    update(fraction) {
      current?.update(Math.round(fraction * units));
      overall?.update(Math.round((position.index - 1 + fraction) * units));
    },
    line(text) {
      // the bars print what they were given to log when they next redraw: before the first bar, at once
      if (bars.isActive) bars.log(`${text}\n`);
      else stderr.write(`${text}\n`);
    },
    stop() {
      if (!bars.isActive) return;
      bars.update(); // the lines logged since the last redraw
      bars.stop();
    },
  };
}

/** Elsewhere (a log, a pipe): plain lines, one per quarter of each file. */
function lineProgress(stderr: Output): RunProgress {
  let prefix = "";
  let nextQuarter = 1;
  return {
    start(index, total, label) {
      prefix = `[${index}/${total}] ${label}`;
      nextQuarter = 1;
      stderr.write(`${prefix}: separating\n`);
    },
    update(fraction) {
      if (fraction >= 1 || fraction < nextQuarter / 4) return;
      nextQuarter = Math.floor(fraction * 4) + 1;
      stderr.write(`${prefix}: ${Math.floor(fraction * 4) * 25} %\n`);
    },
    line(text) {
      stderr.write(`${text}\n`);
    },
    stop() {},
  };
}

export function runProgress(stderr: Output): RunProgress {
  return stderr.isTTY === true ? terminalProgress(stderr) : lineProgress(stderr);
}
