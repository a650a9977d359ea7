import type { Page, PageRequest } from "@mixdown/db";
import { notFound } from "../http/errors.ts";
import type { CallerDeletions } from "./caller-deletions.ts";
import type { CancellableKind, JobCancels } from "./job-cancels.ts";

/** How a job kind reads its caller's rows (its `@mixdown/db` repository). */
export interface CallerRows<Row> {
  findForCaller(callerId: number, id: number): Promise<Row | null>;
  listForCaller(callerId: number, page: PageRequest): Promise<Page<Row>>;
}

/**
 * A caller's jobs of one kind as records: get (404 when not theirs), list (a page), cancel
 * (see `JobCancels`: 409 once ended, 404 when not theirs) and delete (`CallerDeletions`). Every kind's service is one of these,
 * plus its own create; `jobReadRoutes` serves them.
 */
export class CallerJobs<Row extends { status: string }, Record> {
  constructor(
    private readonly jobs: {
      kind: CancellableKind;
      /** how messages name one job ("voice conversion 12 not found") */
      noun: string;
      rows: CallerRows<Row>;
      present(row: Row): Record | Promise<Record>;
      cancels: JobCancels;
      deletions: CallerDeletions;
    },
  ) {}

  async get(callerId: number, id: number): Promise<Record> {
    const row = await this.jobs.rows.findForCaller(callerId, id);
    if (!row) throw notFound(`${this.jobs.noun} ${id} not found`);
    return this.jobs.present(row);
  }

  async list(callerId: number, page: PageRequest): Promise<{ rows: Record[]; total: number }> {
    const { rows, total } = await this.jobs.rows.listForCaller(callerId, page);
    return { rows: await Promise.all(rows.map((r) => this.jobs.present(r))), total };
  }

  /** Ends a running job `cancelled` (see JobCancels); 409 once it has ended, 404 when it is not the caller's. */
  async cancel(callerId: number, id: number): Promise<Record> {
    const { kind, noun, rows, cancels } = this.jobs;
    return this.jobs.present(await cancels.cancelOwned(kind, id, noun, () => rows.findForCaller(callerId, id)));
  }

  /** Deletes the caller's job with its files (a running one is cancelled first; see `CallerDeletions`); 404 when it is not the caller's. */
  async delete(callerId: number, id: number): Promise<void> {
    const { kind, noun, rows, deletions } = this.jobs;
    await deletions.deleteJob(kind, id, noun, () => rows.findForCaller(callerId, id));
  }
}
