import { Worker } from "node:worker_threads";
import type { ConvertVoiceFileResult } from "@mixdown/voice";
import type { VoiceConversionRequest, VoiceThreadData, VoiceThreadResponse } from "./voice-conversion-protocol.ts";

/** A conversion that failed inside a thread; `unrecoverable` says whether a retry could help. */
export class VoiceConversionFailure extends Error {
  override readonly name = "VoiceConversionFailure";
  constructor(
    message: string,
    readonly unrecoverable: boolean,
  ) {
    super(message);
  }
}

interface Slot {
  worker: Worker;
  busy: boolean;
  pending?: { id: number; resolve: (r: ConvertVoiceFileResult) => void; reject: (e: Error) => void; onProgress: (f: number) => void };
}

const threadUrl = new URL("./voice-conversion-thread.ts", import.meta.url);

/** Long-lived conversion threads (models stay loaded between jobs); a dead thread fails its job and is replaced. */
export class VoiceConversionPool {
  readonly #slots: Slot[] = [];
  readonly #waiting: Array<() => void> = [];
  #nextId = 1;
  #closed = false;

  constructor(
    size: number,
    private readonly data: VoiceThreadData,
  ) {
    for (let i = 0; i < size; i++) this.#slots.push(this.#spawn());
  }

  async convert(request: VoiceConversionRequest, onProgress: (fraction: number) => void): Promise<ConvertVoiceFileResult> {
    const slot = await this.#acquire();
    try {
      return await new Promise<ConvertVoiceFileResult>((resolve, reject) => {
        const id = this.#nextId++;
        slot.pending = { id, resolve, reject, onProgress };
        slot.worker.postMessage({ type: "convert", id, ...request });
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
      if (this.#closed) throw new Error("voice conversion pool is closed");
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
    const slot: Slot = { worker, busy: false };
    worker.on("message", (m: VoiceThreadResponse) => {
      const pending = slot.pending;
      if (pending?.id !== m.id) return;
      if (m.type === "progress") pending.onProgress(m.fraction);
      else if (m.type === "result") pending.resolve(m.result);
      else pending.reject(new VoiceConversionFailure(m.message, m.unrecoverable));
    });
    let dead = false;
    const replace = (error: Error) => {
      if (dead) return;
      dead = true;
      slot.pending?.reject(error);
      if (this.#closed) return;
      const index = this.#slots.indexOf(slot);
      if (index >= 0) {
        const fresh = this.#spawn();
        this.#slots[index] = fresh;
        this.#waiting.shift()?.();
      }
    };
    worker.on("error", (err: unknown) => replace(err instanceof Error ? err : new Error(String(err))));
    worker.on("exit", (code) => {
      if (!this.#closed) replace(new Error(`voice conversion thread exited with code ${code}`));
    });
    return slot;
  }
}
