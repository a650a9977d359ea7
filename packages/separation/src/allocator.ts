// The allocator under onnxruntime's CPU memory, for the processes that run models.
//
// With its CPU arena on (onnxruntime's default), every session keeps its own arena at the size of
// its largest run for as long as it lives: a worker with three separation models holds three runs'
// working memory although it runs one model at a time (about 155 MB each for the default models,
// several GB for the real-size ones). With the arena off, each tensor is malloc'd and freed, and
// glibc hands blocks over 32 MB straight back to the kernel, so every run maps and faults its
// memory afresh (2-4x the CPU of a run). jemalloc with purging off and one arena keeps what is
// freed mapped and hands it to whichever session, on whichever thread, runs next: the sessions of
// a process share one run's working memory instead of keeping one each.
//
// So the processes that run models start on jemalloc (MODEL_ALLOCATOR=jemalloc, the default, where
// libjemalloc2 is installed: ./mixdown.sh installs it and the image ships it). On 2026-11-27, with
// the vocal split taking turns with the vocals model and a small V8 young generation (below), a
// vocal separation of 1 or 10 minutes in the worker peaked at 742-782 MB against 1086-1178 on glibc
// with an arena per session, a stem split at 690-721, at the same speed; an RVC conversion of 30 s
// at 1672 against 1936 MB. (A glibc set to the same sharing, one malloc arena, no block mmap'd on its own, the heap
// never trimmed, did as well on separations but held 2116-2219 MB on RVC's conversion, its freed
// blocks fragmented.) The figures, and the earlier runs where jemalloc grew on a long stem split,
// are in docs/benchmarks.md. MODEL_ALLOCATOR=system keeps glibc and the sessions' arenas.
//
// The allocator is fixed when a process starts (LD_PRELOAD), so the launchers (`up`, the image's
// entrypoint, mixdown.sh for the commands that run models, the tests' worker) start the processes
// that run models with modelProcessEnv(); sessions turn their arena off only when this process
// really runs on jemalloc (runsOnJemalloc), so a process started any other way keeps the arena.
import { existsSync, readFileSync } from "node:fs";

/**
 * jemalloc's settings for a process that runs models: never give freed pages back, and one arena
 * for all threads. Any decay time, even 30 s, had jemalloc purge the large blocks between two
 * runs (100,000 page faults a run, the arena-off cost); the memory kept is the largest run's,
 * which an arena keeps too. With an arena per thread (jemalloc's default), what the inference
 * thread frees is not reused by the threads that decode and encode.
 */
export const JEMALLOC_CONF = "dirty_decay_ms:-1,muzzy_decay_ms:-1,narenas:1";

/**
 * glibc's malloc arenas for a process that runs models on it (MALLOC_ARENA_MAX): glibc gives each
 * thread that allocates an arena of its own, up to 8 per core, and memory freed in one thread's
 * arena is not reused by another's. A worker's threads (main, separation, inference, STFT helper,
 * onnxruntime's pool) then each keep what they once held. Two arenas: a 10-minute vocal separation
 * peaked at 1059-1068 MB against 1118-1190, a stem split at 845-868 against 990-1011, at the
 * same speed (bench:worker, alternating, 2026-11-27); RVC's conversion the same either way.
 */
export const GLIBC_ARENAS = "2";

/**
 * The V8 young generation of a process that runs models (NODE_OPTIONS; its threads inherit it).
 * By default V8 grows each isolate's young generation to 48-64 MB and keeps it: the worker's main
 * thread held 64 MB of it, its separation thread 16-20, each helper 8. Their JavaScript is small
 * (the audio is in ArrayBuffers, outside that heap): with 1 MB semi-spaces a 10-minute vocal
 * separation peaked 80 MB lower at the same speed (44.4 against 45.5 s; docs/benchmarks.md).
 */
export const SEMI_SPACE_FLAG = "--max-semi-space-size=1";

/** Where Debian, Ubuntu and the usual distributions put libjemalloc2 (Debian's redis-server depends on it). */
const JEMALLOC_PATHS = [
  "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
  "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
  "/usr/lib64/libjemalloc.so.2",
  "/usr/lib/libjemalloc.so.2",
  "/usr/local/lib/libjemalloc.so.2",
];

/** MODEL_ALLOCATOR: `jemalloc` (default, where the library is installed) or `system` (glibc, an onnxruntime arena per session). */
export const MODEL_ALLOCATORS = ["jemalloc", "system"] as const;
export type ModelAllocator = (typeof MODEL_ALLOCATORS)[number];

export function jemallocPath(): string | undefined {
  return JEMALLOC_PATHS.find((path) => existsSync(path));
}

/**
 * The environment for a process that runs models: `env` with jemalloc preloaded and configured
 * (MODEL_ALLOCATOR=jemalloc, the default; unless the library is not installed or the environment
 * already preloads it; a MALLOC_CONF of the caller's own is kept), or, on glibc, with
 * MALLOC_ARENA_MAX (GLIBC_ARENAS) unless the caller set it; and NODE_OPTIONS with SEMI_SPACE_FLAG
 * unless it names a semi-space size already.
 */
export function modelProcessEnv<E extends Record<string, string | undefined>>(env: E): E {
  const allocator = env.MODEL_ALLOCATOR || "jemalloc";
  if (!(MODEL_ALLOCATORS as readonly string[]).includes(allocator))
    throw new Error(`MODEL_ALLOCATOR must be jemalloc or system, not ${JSON.stringify(env.MODEL_ALLOCATOR)}`);
  const nodeOptions = env.NODE_OPTIONS ?? "";
  const young = /--max-semi-space-size/.test(nodeOptions) ? {} : { NODE_OPTIONS: `${nodeOptions} ${SEMI_SPACE_FLAG}`.trim() };
  const preload = env.LD_PRELOAD ?? "";
  const path = jemallocPath();
  if (/libjemalloc/.test(preload)) return { ...env, ...young };
  if (allocator === "system" || path === undefined)
    return { ...env, ...young, ...(env.MALLOC_ARENA_MAX ? {} : { MALLOC_ARENA_MAX: GLIBC_ARENAS }) };
  return { ...env, ...young, LD_PRELOAD: preload ? `${path} ${preload}` : path, MALLOC_CONF: env.MALLOC_CONF || JEMALLOC_CONF };
}

let onJemalloc: boolean | undefined;

/** Whether this process allocates with jemalloc (it is mapped into it). */
export function runsOnJemalloc(): boolean {
  if (onJemalloc === undefined) {
    try {
      onJemalloc = /libjemalloc/.test(readFileSync("/proc/self/maps", "utf8"));
    } catch {
      onJemalloc = false;
    }
  }
  return onJemalloc;
}

/** onnxruntime's CPU arena for a new session: off where jemalloc shares freed memory among sessions, on otherwise. */
export function cpuArenaEnabled(): boolean {
  return !runsOnJemalloc();
}
