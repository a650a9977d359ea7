import type { Worker } from "node:worker_threads";

/** `Omit` applied to each member of a union (a request without its id). */
export type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** How one of the thread's messages ends a request; undefined for messages that answer none. */
export type Settlement<Result> = { id: number; result: Result } | { id: number; error: Error } | undefined;

/**
 * Requests to a worker thread, each answered by a message carrying its id.
 * The thread keeps the process alive only while an answer is awaited; once
 * the thread fails or exits, every awaited and every later request rejects.
 */
export class ThreadRequests<Message, Result> {
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve: (result: Result) => void; reject: (err: Error) => void }>();
  #nextId = 0;
  #broken: Error | undefined;

  /**
   * `answer` reads the thread's messages; `name` appears in the error when
   * the thread exits, e.g. "inference thread".
   */
  constructor(worker: Worker, name: string, answer: (message: Message) => Settlement<Result>) {
    this.#worker = worker;
    // listeners first, then unref: adding a 'message' listener refs the thread again
    worker.on("message", (message: Message) => {
      const settlement = answer(message);
      if (settlement) this.#settle(settlement);
    });
    worker.on("error", (err: Error) => this.fail(err));
    worker.on("exit", (code: number) => this.fail(new Error(`${name} exited with code ${code}`)));
    worker.unref();
  }

  /** Set once no request can succeed any more. */
  get broken(): Error | undefined {
    return this.#broken;
  }

  /** Posts the message `build(id)` builds and resolves with the result settled for that id. */
  request(build: (id: number) => unknown): Promise<Result> {
    if (this.#broken) return Promise.reject(this.#broken);
    const id = this.#nextId++;
    if (this.#pending.size === 0) this.#worker.ref();
    return new Promise<Result>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage(build(id));
    });
  }

  #settle(settlement: NonNullable<Settlement<Result>>): void {
    const pending = this.#pending.get(settlement.id);
    if (!pending) return;
    this.#pending.delete(settlement.id);
    if (this.#pending.size === 0) this.#worker.unref();
    if ("error" in settlement) pending.reject(settlement.error);
    else pending.resolve(settlement.result);
  }

  /** Rejects everything awaited and everything later with `err` (the first failure wins). */
  fail(err: Error): void {
    this.#broken ??= err;
    for (const pending of this.#pending.values()) pending.reject(this.#broken);
    this.#pending.clear();
  }
}
