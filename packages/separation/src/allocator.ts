// The allocator under onnxruntime's CPU memory, for the processes that run models.
//
// With its CPU arena on (onnxruntime's default), every session keeps its own arena at the size of
// its largest run for as long as it lives: a worker with three separation models holds three runs'
// working memory although it runs one model at a time (about 170 MB each for the default models,
// several GB for the real-size ones). With the arena off, each tensor is malloc'd and freed, and
// glibc hands blocks over 32 MB straight back to the kernel, so every run maps and faults its
// memory afresh (2-4x the CPU of a run). jemalloc with purging off and one arena keeps what is
// freed mapped and hands it to whichever session, on whichever thread, runs next: the sessions of
// a process share one run's working memory instead of keeping one each.
//
// For the worker it is an option (MODEL_ALLOCATOR=jemalloc), not the default: it saves memory on
// short jobs and on RVC conversions at the same speed, but on a 10-minute stem split its memory
// grew past glibc's (1364 against 1193 MB) and inference ran 11 % slower (docs/benchmarks.md has
// the figures). `./mixdown.sh separate`, one job per process, starts on it unless MODEL_ALLOCATOR
// says otherwise: there it saves 18-58 % of the memory for ~3 % of the time. The allocator is fixed when a
// process starts (LD_PRELOAD), so the launchers (`up`, the image's entrypoint, mixdown.sh for the
// commands that run models, the tests' worker) start the processes that run models with
// modelProcessEnv(); sessions turn their arena off only when this process really runs on jemalloc
// (runsOnJemalloc), so a process started any other way keeps the arena.
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

/** Where Debian, Ubuntu and the usual distributions put libjemalloc2 (Debian's redis-server depends on it). */
const JEMALLOC_PATHS = [
  "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
  "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
  "/usr/lib64/libjemalloc.so.2",
  "/usr/lib/libjemalloc.so.2",
  "/usr/local/lib/libjemalloc.so.2",
];

/** MODEL_ALLOCATOR: `system` (default: glibc, an onnxruntime arena per session) or `jemalloc` (where the library is installed). */
export const MODEL_ALLOCATORS = ["system", "jemalloc"] as const;
export type ModelAllocator = (typeof MODEL_ALLOCATORS)[number];

export function jemallocPath(): string | undefined {
  return JEMALLOC_PATHS.find((path) => existsSync(path));
}

/**
 * The environment for a process that runs models: with MODEL_ALLOCATOR=jemalloc, `env` with
 * jemalloc preloaded and configured (unless the library is not installed or the environment
 * already preloads it; a MALLOC_CONF of the caller's own is kept); on glibc, `env` with
 * MALLOC_ARENA_MAX (GLIBC_ARENAS) unless the caller set it.
 */
export function modelProcessEnv<E extends Record<string, string | undefined>>(env: E): E {
  const allocator = env.MODEL_ALLOCATOR || "system";
  if (!(MODEL_ALLOCATORS as readonly string[]).includes(allocator))
    throw new Error(`MODEL_ALLOCATOR must be jemalloc or system, not ${JSON.stringify(env.MODEL_ALLOCATOR)}`);
  const preload = env.LD_PRELOAD ?? "";
  const path = jemallocPath();
  if (/libjemalloc/.test(preload)) return env;
  if (allocator === "system" || path === undefined)
    return env.MALLOC_ARENA_MAX ? env : { ...env, MALLOC_ARENA_MAX: GLIBC_ARENAS };
  return { ...env, LD_PRELOAD: preload ? `${path} ${preload}` : path, MALLOC_CONF: env.MALLOC_CONF || JEMALLOC_CONF };
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
