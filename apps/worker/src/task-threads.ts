// A pool of long-lived worker_threads that run one kind of task each (separation, voice
// conversion). Threads keep what they load (onnxruntime sessions) between tasks, so the main
// thread only moves files and rows, and its event loop stays free for BullMQ's lock renewals.
import { parentPort, Worker } from "node:worker_threads";
import { JobFailure, type SerialisedJobError } from "@mixdown/jobs";

type ToThread<Req> = { type: "task"; id: number; request: Req } | { type: "cancel"; id: number };
type FromThread<Res> =
  | { type: "ready"; info: unknown }
  | { type: "fatal"; message: string }
  | { type: "progress"; id: number; fraction: number }
  | { type: "result"; id: number; result: Res }
  | { type: "error"; id: number; error: SerialisedJobError };

interface Slot<Res> {
  worker: Worker;
  ready: Promise<unknown>;
  busy: boolean;
  pending?: { id: number; resolve: (r: Res) => void; reject: (e: Error) => void; onProgress: (f: number) => void };
  /**
   * Fails the slot's task with `error` and puts a fresh thread in its place; this one is
   * terminated once it reports the end of its task (see CANCEL_DEADLINE_MS).
   */
  retire(error: Error): void;
  /** Retired: out of the pool, terminated when its task ends. */
  retiring?: boolean;
  /** Terminated by an idle unload: its exit is not a death to repair. */
  unloaded?: boolean;
}

export interface PoolOptions {
  /**
   * After this long without a task (WORKER_MODEL_IDLE_SECONDS; 0 or absent: never) the threads
   * are terminated, and what they loaded goes with them; the next task starts them again and
   * waits for their preload (the models' load).
   */
  idleMs?: number;
  /** Start with no threads: the first task starts them (a worker restarted cold, see main.ts). */
  startUnloaded?: boolean;
  /** Told when the threads are terminated for idleness, and when a task starts them again. */
  onUnload?(): void;
  onLoad?(): void;
  /** CANCEL_DEADLINE_MS unless given (the tests' shorter one). */
  cancelDeadlineMs?: number;
}

/**
 * A cancelled task is told to stop and stops at its next check of the signal: between blocks, and
 * after the inference call in flight returns. Its thread is never terminated while it runs: a
 * worker thread terminated during an onnxruntime call takes the whole process down when the call
 * returns (`terminate called after throwing an instance of 'Napi::Error'`, exit 134: every job
 * of the worker lost its run), as native add-ons do when their thread's environment is torn down
 * under them. A task that has not stopped CANCEL_DEADLINE_MS after its cancel (a thread stuck in a
 * loop that never checks its signal) is failed, and its thread taken out of the pool and replaced;
 * the old thread is terminated once it reports the end of its task, or at that point still (a
 * minute is far longer than any single inference call Mixdown makes; past it the thread is stuck).
 */
export const CANCEL_DEADLINE_MS = 60_000;

/**
 * The main-thread side: a fixed number of threads; a thread that dies fails its task (the job
 * retries) and is replaced. A task whose `signal` fires is told to stop, and the pool waits for it
 * to stop (see CANCEL_DEADLINE_MS), so a cancelled job's files are never written after its end.
 */
export class TaskThreadPool<Req, Res> {
  #slots: Slot<Res>[] = [];
  readonly #waiting: Array<() => void> = [];
  #nextId = 1;
  #closed = false;
  #idleTimer: NodeJS.Timeout | undefined;
  get #cancelDeadlineMs(): number {
    return this.options.cancelDeadlineMs ?? CANCEL_DEADLINE_MS;
  }

  constructor(
    private readonly name: string,
    private readonly threadUrl: URL,
    private readonly size: number,
    private readonly workerData: unknown,
    private readonly options: PoolOptions = {},
  ) {
    if (!options.startUnloaded) this.#load();
  }

  /** Resolves once every thread has loaded what it preloads, with what each one's preload returned; rejects when one cannot. */
  async ready(): Promise<unknown[]> {
    return Promise.all(this.#slots.map((s) => s.ready));
  }

  /** Whether the threads are up (false once an idle unload has terminated them, until the next task). */
  get loaded(): boolean {
    return this.#slots.length > 0;
  }

  /** Runs one task on a free thread; rejects with `signal.reason` once a cancelled task has stopped (or its thread was replaced). */
  async run(request: Req, onProgress: (fraction: number) => void, signal?: AbortSignal): Promise<Res> {
    signal?.throwIfAborted();
    const slot = await this.#acquire();
    let deadline: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      await slot.ready;
      signal?.throwIfAborted();
      return await new Promise<Res>((resolve, reject) => {
        const id = this.#nextId++;
        slot.pending = { id, resolve, reject, onProgress };
        onAbort = () => {
          slot.worker.postMessage({ type: "cancel", id } satisfies ToThread<Req>);
          deadline = setTimeout(() => {
            if (slot.pending?.id === id) slot.retire(signal!.reason as Error);
          }, this.#cancelDeadlineMs);
        };
        signal?.addEventListener("abort", onAbort, { once: true });
        slot.worker.postMessage({ type: "task", id, request } satisfies ToThread<Req>);
      });
    } catch (err) {
      throw signal?.aborted ? signal.reason : err;
    } finally {
      clearTimeout(deadline);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
      slot.pending = undefined;
      slot.busy = false;
      this.#waiting.shift()?.();
      this.#armIdleTimer();
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    await Promise.all(this.#slots.map((s) => s.worker.terminate()));
  }

  #load(): void {
    for (let i = 0; i < this.size; i++) this.#slots.push(this.#spawn());
  }

  /** Once no thread is busy and nobody waits, the idle time starts; a task taken meanwhile stops it. */
  #armIdleTimer(): void {
    const idleMs = this.options.idleMs ?? 0;
    if (idleMs <= 0 || this.#closed || this.#waiting.length > 0 || this.#slots.some((s) => s.busy)) return;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => this.#unload(), idleMs);
    // an idle pool's timer does not keep a process alive that has nothing else to do
    this.#idleTimer.unref();
  }

  #unload(): void {
    if (this.#closed || this.#slots.length === 0 || this.#slots.some((s) => s.busy)) return;
    const slots = this.#slots;
    this.#slots = [];
    for (const slot of slots) {
      slot.unloaded = true;
      void slot.worker.terminate();
    }
    this.options.onUnload?.();
  }

  async #acquire(): Promise<Slot<Res>> {
    clearTimeout(this.#idleTimer);
    for (;;) {
      if (this.#closed) throw new Error(`${this.name} pool is closed`);
      if (this.#slots.length === 0) {
        this.#load();
        this.options.onLoad?.();
      }
      const free = this.#slots.find((s) => !s.busy);
      if (free) {
        free.busy = true;
        return free;
      }
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
  }

  #spawn(): Slot<Res> {
    const worker = new Worker(this.threadUrl, { workerData: this.workerData });
    let markReady!: (info: unknown) => void;
    let markFatal!: (error: Error) => void;
    const slot: Slot<Res> = {
      worker,
      busy: false,
      ready: new Promise<unknown>((resolve, reject) => {
        markReady = resolve;
        markFatal = reject;
      }),
      retire: (error) => {
        replace(error);
        slot.retiring = true;
        // terminated when its task ends (below), so never in the middle of a native call; a thread
        // stuck for good is terminated after another deadline, whatever it is doing
        setTimeout(() => void worker.terminate(), this.#cancelDeadlineMs).unref();
      },
    };
    slot.ready.catch(() => {});
    worker.on("message", (m: FromThread<Res>) => {
      if (m.type === "ready") return markReady(m.info);
      if (m.type === "fatal") return markFatal(new Error(m.message));
      if (slot.retiring) {
        if (m.type === "result" || m.type === "error") void worker.terminate();
        return;
      }
      const pending = slot.pending;
      if (pending?.id !== m.id) return;
      if (m.type === "progress") pending.onProgress(m.fraction);
      else if (m.type === "result") pending.resolve(m.result);
      else pending.reject(JobFailure.from(m.error));
    });
    let dead = false;
    const replace = (error: Error) => {
      if (dead || slot.unloaded) return;
      dead = true;
      markFatal(error);
      slot.pending?.reject(error);
      if (this.#closed) return;
      const index = this.#slots.indexOf(slot);
      if (index >= 0) {
        this.#slots[index] = this.#spawn();
        this.#waiting.shift()?.();
      }
    };
    worker.on("error", (err: unknown) => replace(err instanceof Error ? err : new Error(String(err))));
    worker.on("exit", (code) => {
      if (!this.#closed) replace(new Error(`${this.name} thread exited with code ${code}`));
    });
    return slot;
  }
}

export interface TaskHandler<Req, Res> {
  /**
   * Loaded before the thread reports ready (models), so the first task pays no load time; what
   * it returns (plain data) reaches the pool's ready().
   */
  preload?(): Promise<unknown>;
  /** `signal` fires when the job is cancelled: stop child processes and loops, then throw (its reason, or anything). */
  run(request: Req, onProgress: (fraction: number) => void, signal: AbortSignal): Promise<Res>;
  /**
   * The class of a known error (undecodable audio, a broken model file: `bad-input`), with the
   * message a caller may be shown; undefined for the rest, which are `transient` (retried).
   */
  classify(error: unknown): SerialisedJobError | undefined;
}

/** The thread side: serves tasks from the pool one at a time, reporting progress in whole percents. */
export function serveTasks<Req, Res>(handler: TaskHandler<Req, Res>): void {
  const port = parentPort!;
  const post = (m: FromThread<Res>) => port.postMessage(m);
  (handler.preload?.() ?? Promise.resolve()).then(
    (info) => post({ type: "ready", info }),
    (err: Error) => post({ type: "fatal", message: `cannot load models: ${err.message}` }),
  );
  const cancels = new Map<number, AbortController>();
  port.on("message", async (message: ToThread<Req>) => {
    if (message.type === "cancel") {
      cancels.get(message.id)?.abort(new JobFailure("cancelled", "cancelled"));
      return;
    }
    const { id, request } = message;
    const controller = new AbortController();
    cancels.set(id, controller);
    let lastPercent = -1;
    try {
      const result = await handler.run(
        request,
        (fraction) => {
          const percent = Math.floor(fraction * 100);
          if (percent !== lastPercent) {
            lastPercent = percent;
            post({ type: "progress", id, fraction });
          }
        },
        controller.signal,
      );
      post({ type: "result", id, result });
    } catch (err) {
      const error = controller.signal.aborted
        ? { kind: "cancelled" as const, message: "cancelled" }
        : (handler.classify(err) ?? { kind: "transient", message: err instanceof Error ? err.message : String(err) });
      post({ type: "error", id, error });
    } finally {
      cancels.delete(id);
    }
  });
}
