/**
 * A job's uploads, one file at a time, in the background from when each file is final: the job
 * adds a file as soon as it is written and goes on with its work while the file uploads (a
 * separation's first files while its vocal split runs). A failed upload stops the ones queued after
 * it. The job waits for every upload it started to settle before it ends, either way (`finished`
 * on success, `settled` on its failure path), so a failed job's discard finds every object it made.
 */
export class UploadQueue<Uploaded> {
  readonly #uploaded = new Map<string, Uploaded>();
  readonly #queued = new Set<string>();
  #tail: Promise<unknown> = Promise.resolve();
  #uploadMs = 0;

  /**
   * `upload` stores one file and says what it stored (its keys); it settles only once nothing of
   * the file is still being written. An aborted `signal` stops the uploads not started yet.
   */
  constructor(
    private readonly upload: (file: string) => Promise<Uploaded>,
    private readonly signal: AbortSignal,
  ) {}

  /** Queues the upload of `file`, which is final; a file already queued is not queued again. */
  add(file: string): void {
    if (this.#queued.has(file)) return;
    this.#queued.add(file);
    this.#tail = this.#tail.then(async () => {
      this.signal.throwIfAborted();
      const started = performance.now();
      try {
        this.#uploaded.set(file, await this.upload(file));
      } finally {
        this.#uploadMs += performance.now() - started;
      }
    });
    // awaited by finished() or settled(): until then a failure is not an unhandled rejection
    this.#tail.catch(() => {});
  }

  /** Waits for every upload queued so far; throws the failure that stopped them, if one did. */
  async finished(): Promise<void> {
    await this.#tail;
  }

  /** Waits for every upload queued so far to settle, failed or not: the job's failure path, before it rethrows. */
  async settled(): Promise<void> {
    await this.#tail.catch(() => {});
  }

  /** What the upload of `file` stored; only after `finished`. */
  uploaded(file: string): Uploaded {
    const uploaded = this.#uploaded.get(file);
    if (uploaded === undefined) throw new Error(`${file} was never uploaded`);
    return uploaded;
  }

  /** How many files were queued. */
  get files(): number {
    return this.#queued.size;
  }

  /** The time spent uploading, summed over the files (they upload one at a time). */
  get uploadMs(): number {
    return this.#uploadMs;
  }
}
