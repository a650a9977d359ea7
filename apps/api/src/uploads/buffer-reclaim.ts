import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

type GcFunction = (options?: { type?: "minor" | "major"; execution?: "sync" | "async" }) => void;

/**
 * Moving an upload (socket -> temp file -> object storage) goes through thousands of 64 KB
 * buffers that die at once, but V8 frees them only at its next scavenge, which a mostly idle
 * young generation (semi-spaces up to 16 MB) postpones: a 100 MB upload grew RSS by ~45-50 MB.
 * While uploads are being moved, a minor GC every 25 ms keeps the growth to a few MB, for well
 * under a millisecond each (bench.ts measures it). The gc function is taken once, at load,
 * without exposing `gc` globally.
 */
const minorGc: GcFunction | null = (() => {
  try {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as GcFunction;
    setFlagsFromString("--no-expose-gc");
    return typeof gc === "function" ? gc : null;
  } catch {
    return null;
  }
})();

const INTERVAL_MS = 25;
let active = 0;
let timer: NodeJS.Timeout | undefined;

/** Runs `work` (which streams upload bytes) with periodic minor GCs; shared by concurrent uploads. */
export async function reclaimBuffersWhile<T>(work: () => Promise<T>): Promise<T> {
  if (!minorGc) return work();
  if (active++ === 0) {
    timer = setInterval(() => minorGc({ type: "minor" }), INTERVAL_MS);
    timer.unref();
  }
  try {
    return await work();
  } finally {
    if (--active === 0) clearInterval(timer);
  }
}
