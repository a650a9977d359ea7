import { Worker } from "node:worker_threads";
import type { SeparateFileResult } from "@mixdown/separation";
import type { SeparationRequest, SeparationThreadData, ThreadError, ThreadRequest, ThreadResponse } from "./separation-protocol.ts";

/** A separation that failed inside a thread; `unrecoverable` says whether a retry could help. */
export class SeparationFailure extends Error {
  override readonly name = "SeparationFailure";
  readonly unrecoverable: boolean;

  constructor(error: ThreadError) {
    super(error.message);
    this.unrecoverable = error.unrecoverable;
  }
}

interface Pending {
  resolve: (result: SeparateFileResult) => void;
  reject: (error: Error) => void;
  onProgress: (fraction: number) => void;
}

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  busy: boolean;
  pending?: { id: number } & Pending;
}

const threadUrl = new URL("./separation-thread.ts", import.meta.url);

/**
 * A fixed set of long-lived threads, each holding its own loaded models. A request waits for a
 * free thread; a thread that dies fails its request (the job is retried) and is replaced.
 */
export class SeparationPool {
  readonly #slots: Slot[] = [];
  readonly #waiting: Array<() => void> = [];
  #nextId = 1;
  #closed = false;

  constructor(
    private readonly size: number,
    private readonly data: SeparationThreadData,
  ) {
    for (let i = 0; i < size; i++) this.#slots.push(this.#spawn());
  }

  /** Resolves once every thread has loaded its models; rejects when one cannot. */
  async ready(): Promise<void> {
    await Promise.all(this.#slots.map((s) => s.ready));
  }

  async separate(request: SeparationRequest, onProgress: (fraction: number) => void): Promise<SeparateFileResult> {
    const slot = await this.#acquire();
    try {
      await slot.ready;
      return await new Promise<SeparateFileResult>((resolve, reject) => {
        const id = this.#nextId++;
        slot.pending = { id, resolve, reject, onProgress };
        const message: ThreadRequest = { type: "separate", id, ...request };
        slot.worker.postMessage(message);
      });
    } finally {
      slot.pending = undefined;
      slot.busy = false;
      this.#waiting.shift()?.();
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#slots.map((s) => s.worker.terminate()));
  }

  async #acquire(): Promise<Slot> {
    for (;;) {
      if (this.#closed) throw new Error("separation pool is closed");
      const free = this.#slots.find((s) => !s.busy);
      if (free) {
        free.busy = true;
        return free;
      }
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
  }

  #spawn(): Slot {
    const worker = new Worker(threadUrl, { workerData: this.data });
    let markReady!: () => void;
    let markFatal!: (error: Error) => void;
    const slot: Slot = {
      worker,
      busy: false,
      ready: new Promise<void>((resolve, reject) => {
        markReady = resolve;
        markFatal = reject;
      }),
    };
    slot.ready.catch(() => {});
    worker.on("message", (message: ThreadResponse) => {
      const pending = slot.pending;
      switch (message.type) {
        case "ready":
          markReady();
          return;
        case "fatal":
          markFatal(new Error(message.message));
          return;
        case "progress":
          if (pending?.id === message.id) pending.onProgress(message.fraction);
          return;
        case "result":
          if (pending?.id === message.id) pending.resolve(message.result);
          return;
        case "error":
          if (pending?.id === message.id) pending.reject(new SeparationFailure(message.error));
          return;
        case "closed":
          return;
      }
    });
    let dead = false;
    const replace = (error: Error) => {
      if (dead) return;
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
      if (!this.#closed) replace(new Error(`separation thread exited with code ${code}`));
    });
    return slot;
  }
}
