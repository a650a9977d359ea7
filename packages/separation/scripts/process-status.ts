import { readFile } from "node:fs/promises";

/** A memory field of this process's /proc/self/status (VmRSS: now, VmHWM: its peak), in MB. */
export async function statusMb(field: "VmRSS" | "VmHWM"): Promise<number> {
  const status = await readFile("/proc/self/status", "utf8");
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return kb / 1024;
}
