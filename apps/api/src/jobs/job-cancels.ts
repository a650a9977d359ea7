import type { MixdownJobTables } from "@mixdown/db";
import type { JobTableKind } from "@mixdown/jobs";
import type { CancelNotice, JobQueues } from "@mixdown/queue";
import type { FastifyBaseLogger } from "fastify";
import { conflict, notFound } from "../http/errors.ts";

/** The kinds a client may cancel (`POST .../:id/cancel`): those with a job table; builds and media renders are the service's own work. */
export type CancellableKind = JobTableKind;

/**
 * Cancels a caller's job: the row ends `cancelled` at once, in the same conditional update the
 * worker's own writes use (only while `running`), so a cancel racing the job's completion leaves
 * exactly one end state; then every worker is told (the one running it stops within a couple of
 * seconds and discards its partial outputs) and a waiting queue entry is removed.
 */
export class JobCancels {
  constructor(
    private readonly tables: Pick<MixdownJobTables, CancellableKind>,
    private readonly queues: Pick<JobQueues, "announceCancel">,
    private readonly log: FastifyBaseLogger,
  ) {}

  /**
   * `find` reads the caller's row (null: not theirs or gone -> 404). Returns the row as it is
   * after the cancel; a row that has already ended is a 409 naming its status.
   */
  async cancelOwned<Row extends { status: string }>(
    kind: CancellableKind,
    rowId: number,
    noun: string,
    find: () => Promise<Row | null>,
  ): Promise<Row> {
    const row = await find();
    if (!row) throw notFound(`${noun} ${rowId} not found`);
    if (row.status === "running" && (await this.tables[kind].cancel(rowId))) {
      await this.#announce({ kind, rowId });
      return (await find()) ?? row;
    }
    const now = (await find()) ?? row;
    throw conflict(`${noun} ${rowId} has already ended (status ${now.status}); only a running job can be cancelled`);
  }

  /** Ends a running job `cancelled` (no owner check: a deletion checked it) and tells the workers; nothing when it has ended. */
  async cancelRunning(kind: CancellableKind, rowId: number): Promise<void> {
    if (await this.tables[kind].cancel(rowId)) await this.#announce({ kind, rowId });
  }

  async #announce(notice: CancelNotice): Promise<void> {
    // The row is cancelled already; a worker that misses the message finds that out by itself.
    await this.queues
      .announceCancel(notice)
      .catch((err: Error) =>
        this.log.warn({ err: err.message, ...notice }, "cancel not announced to the workers; they will notice the cancelled row"),
      );
  }
}
