/**
 * A command's wall time and the memory of its whole process tree, sampled from /proc: what the
 * benches that run an upstream tool beside Mixdown report for both sides
 * (`bench:separation --upstream`, `bench:voice --upstream`).
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { basename, resolve } from "node:path";

const REPO = resolve(import.meta.dirname, "../../..");

/** What one command cost: wall time and the memory of its whole process tree. */
export interface TreeMeasure {
  wallMs: number;
  /** the sum over every process the tree ever had of its own peak (VmHWM): an upper bound */
  hwmSumMb: number;
  /** the largest sum of the tree's resident sets seen at one sample (every 100 ms): a lower bound */
  rssSumPeakMb: number;
  processes: number;
  /** each process's own peak, largest first: what the sum is made of */
  byProcess: { pid: number; command: string; hwmMb: number }[];
}

function statusKb(pid: number): { hwm: number; rss: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return {
      hwm: Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0),
      rss: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0),
    };
  } catch {
    return undefined; // exited between the listing and the read
  }
}

function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim().slice(0, 160) || undefined;
  } catch {
    return undefined;
  }
}

/** The pids under `root` (itself included) with their parents, from /proc/PID/stat. */
function descendants(root: number): { pid: number; ppid: number }[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue;
    }
    // the command name, in parentheses, may hold spaces: the parent is the second field after it
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    const list = children.get(ppid);
    if (list) list.push(pid);
    else children.set(ppid, [pid]);
  }
  const out: { pid: number; ppid: number }[] = [];
  const stack = [{ pid: root, ppid: 0 }];
  while (stack.length > 0) {
    const entry = stack.pop()!;
    out.push(entry);
    stack.push(...(children.get(entry.pid) ?? []).map((pid) => ({ pid, ppid: entry.pid })));
  }
  return out;
}

/**
 * Runs a command to its end, sampling its process tree every 100 ms. A process's VmHWM only
 * grows, so the last sample before it exits holds its peak up to then (a process that lives
 * under 100 ms may be missed: ffmpeg probes, a few MB each). A child caught between fork and
 * exec (its command line still its parent's) reports its parent's memory as its own (the
 * same pages, shared or copy-on-write): such samples are left out, and a process's peak
 * starts again when its command line changes (exec gives it a new address space and VmHWM).
 */
export function measureTree(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; log: string },
): Promise<TreeMeasure> {
  return new Promise((resolvePromise, reject) => {
    const start = performance.now();
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      cwd: options.cwd ?? REPO,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const keep = (d: Buffer) => {
      output = (output + d.toString()).slice(-20000);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    const hwm = new Map<number, number>();
    const commands = new Map<number, string>();
    let rssSumPeak = 0;
    const sample = () => {
      if (child.pid === undefined) return;
      let rssSum = 0;
      const tree = descendants(child.pid);
      const now = new Map(tree.map(({ pid }) => [pid, commandLine(pid)]));
      for (const { pid, ppid } of tree) {
        const cmd = now.get(pid);
        if (cmd === undefined || (now.has(ppid) && cmd === now.get(ppid))) continue;
        const s = statusKb(pid);
        if (!s) continue;
        hwm.set(pid, commands.get(pid) === cmd ? Math.max(hwm.get(pid) ?? 0, s.hwm) : s.hwm);
        commands.set(pid, cmd);
        rssSum += s.rss;
      }
      rssSumPeak = Math.max(rssSumPeak, rssSum);
    };
    const timer = setInterval(sample, 100);
    child.on("error", (error) => {
      clearInterval(timer);
      reject(error);
    });
    child.on("exit", () => sample());
    child.on("close", (code) => {
      clearInterval(timer);
      const wallMs = performance.now() - start;
      const finish = () => {
        if (code !== 0) {
          reject(new Error(`${basename(command)} exited with ${code}; its output is in ${options.log}:\n${output.slice(-3000)}`));
          return;
        }
        let sum = 0;
        for (const kb of hwm.values()) sum += kb;
        const byProcess = [...hwm]
          .map(([pid, kb]) => ({ pid, command: commands.get(pid) ?? "?", hwmMb: kb / 1024 }))
          .sort((a, b) => b.hwmMb - a.hwmMb);
        resolvePromise({ wallMs, hwmSumMb: sum / 1024, rssSumPeakMb: rssSumPeak / 1024, processes: hwm.size, byProcess });
      };
      // the log is on disk before the caller can read it
      writeFile(options.log, output).then(finish, reject);
    });
  });
}

/** "N processes; largest peaks (MB): ...": what a tree's peak is made of, its six largest. */
export function describePeaks(m: TreeMeasure): string {
  const top = m.byProcess
    .slice(0, 6)
    .map(
      (p) =>
        `${p.hwmMb.toFixed(0)} ${p.command
          .split(" ")
          .slice(0, 3)
          .map((w) => basename(w))
          .join(" ")}`,
    )
    .join("; ");
  return `${m.processes} processes; largest peaks (MB): ${top}`;
}

/** The upstream's and Mixdown's commands run back to back, in the order asked. */
export async function measurePair(
  order: "upstream-first" | "mixdown-first",
  runUpstream: () => Promise<TreeMeasure>,
  runMixdown: () => Promise<TreeMeasure>,
): Promise<{ upstream: TreeMeasure; mixdown: TreeMeasure }> {
  if (order === "upstream-first") {
    const upstream = await runUpstream();
    return { upstream, mixdown: await runMixdown() };
  }
  const mixdown = await runMixdown();
  return { upstream: await runUpstream(), mixdown };
}

/**
 * A side-by-side table's row start: "| input | upstream wall s | Mixdown wall s | upstream /
 * Mixdown wall | upstream peak RSS MB | Mixdown peak RSS MB | Mixdown / upstream RSS |", each peak
 * the summed VmHWM with the largest simultaneous sum in brackets.
 */
export function pairCells(seconds: number, upstream: TreeMeasure, mixdown: TreeMeasure): string {
  const label = seconds >= 60 ? `${seconds / 60} min` : `${seconds} s`;
  const mb = (x: number) => x.toFixed(0);
  const sec = (ms: number) => (ms / 1000).toFixed(1);
  return (
    `| ${label} | ${sec(upstream.wallMs)} | ${sec(mixdown.wallMs)} | ${(upstream.wallMs / mixdown.wallMs).toFixed(2)} | ` +
    `${mb(upstream.hwmSumMb)} (${mb(upstream.rssSumPeakMb)}) | ${mb(mixdown.hwmSumMb)} (${mb(mixdown.rssSumPeakMb)}) | ` +
    `${(mixdown.hwmSumMb / upstream.hwmSumMb).toFixed(2)} (${(mixdown.rssSumPeakMb / upstream.rssSumPeakMb).toFixed(2)}) |`
  );
}
