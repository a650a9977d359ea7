import type { JobTableKind, RecordKind } from "@mixdown/jobs";
import { jobOutputKeys } from "@mixdown/jobs";
import type { JobStatus, Prisma, PrismaClient } from "../../generated/prisma/client.ts";
import { poolOf } from "../../client.ts";
import { ownedStorage, type JobFiles } from "../job-files.ts";
import {
  endInTransaction,
  endJobRow,
  groupByStatus,
  statusTable,
  type JobTableRows,
  type OwnedStorage,
  type StatusTableModel,
} from "../job-table.ts";
import { readPage, type Page, type PageRequest } from "../paging.ts";

/** What every row of a one-upload kind has: its caller, its status and the seconds it counts. */
interface OneUploadRow {
  id: number;
  callerId: number;
  status: JobStatus;
  audioSeconds: number | null;
}

/** The Prisma delegate calls a one-upload kind makes, on its own model (each kind's generated delegate has them). */
interface OneUploadDelegate<Row> {
  create(args: { data: object }): PromiseLike<Row>;
  findUnique(args: { where: { id: number }; select?: object }): PromiseLike<Row | null>;
  findFirst(args: { where: object }): PromiseLike<Row | null>;
  updateMany(args: { where: object; data: object }): PromiseLike<{ count: number }>;
  count(args: { where: object }): PromiseLike<number>;
  groupBy(args: { by: ["status"]; _count: { _all: true } }): PromiseLike<Array<{ status: JobStatus; _count: { _all: number } }>>;
}

/**
 * A kind whose job is one caller's work on its own upload(s), queued as `{ jobId }` on the queue
 * of its name, its record kind counting the row's `audioSeconds` in usage once it succeeded: audio
 * analysis, vocal repair, mastering. Its table, its stored files and its record kind, once.
 */
export interface OneUploadKind<K extends JobTableKind> {
  kind: K;
  /** The Prisma model (`vocalRepairJob`) and the SQL table (`VocalRepairJob`) of its rows. */
  model: StatusTableModel;
  table: JobFiles["table"];
  recordKind: RecordKind;
  /** The row's upload keys (deleted by retention after RETENTION_INPUT_MINUTES) and its outputs' keys. */
  inputColumns: readonly string[];
  outputColumns: readonly string[];
}

const delegate = <Row>(db: PrismaClient | Prisma.TransactionClient, model: StatusTableModel) =>
  (db as unknown as Record<StatusTableModel, OneUploadDelegate<Row>>)[model];

/** The files a one-upload kind's rows own: its uploads and its outputs' folder. */
function filesOf(spec: OneUploadKind<JobTableKind>): JobFiles {
  return {
    table: spec.table,
    inputColumns: [...spec.inputColumns],
    outputColumns: [...spec.outputColumns],
    outputListColumns: [],
    kindColumns: [],
    recordKind: () => spec.recordKind,
    outputPrefix: (row) => jobOutputKeys(spec.kind, row.id).prefix,
  };
}

/**
 * A one-upload kind's rows as the worker, the reconciler, /metrics, deletions and webhooks read
 * and write them, with the storage a row owns.
 */
export function oneUploadRows<K extends JobTableKind, Row extends OneUploadRow, Output extends object>(
  spec: OneUploadKind<K>,
): { rows: JobTableRows<K, Row, Output, Row>; storage(row: Row): OwnedStorage } {
  const ref = { kind: spec.kind, model: spec.model } as const;
  const files = filesOf(spec);
  const storage = (row: Row) => ownedStorage(files, row as unknown as Record<string, unknown> & { id: number });
  const rows: JobTableRows<K, Row, Output, Row> = {
    kind: spec.kind,
    model: spec.model,
    table: (prisma, options = {}) => ({
      // a one-upload kind's payload is `{ jobId }` on its own queue (the catalogue's entry for K says so)
      ...statusTable(prisma, ref, (r) => ({ queue: spec.kind, payload: { jobId: r.id } }) as never, undefined, options),
      findRunnable: (id) =>
        delegate<Row>(prisma, spec.model).findFirst({ where: { id, status: "running" } }) as Promise<Row | null>,
      callerOf: (row) => row.callerId,
      complete: (id, output) =>
        endInTransaction(prisma, options, async (tx) => {
          const row = await delegate<Row>(tx, spec.model).findUnique({ where: { id }, select: { audioSeconds: true } });
          if (!row) return null;
          return endJobRow(
            tx,
            ref,
            id,
            { ...output, status: "success", progress: 100, errorMessage: null },
            { kind: spec.recordKind, seconds: row.audioSeconds },
          );
        }),
    }),
    countByStatus: async (prisma) =>
      groupByStatus(await delegate<Row>(prisma, spec.model).groupBy({ by: ["status"], _count: { _all: true } }), spec.recordKind),
    owned: async (prisma, id) => {
      const row = await delegate<Row>(prisma, spec.model).findUnique({ where: { id } });
      return row && { callerId: row.callerId, status: row.status, recordKind: spec.recordKind, storage: storage(row) };
    },
    webhookRow: (prisma, id) => delegate<Row>(prisma, spec.model).findUnique({ where: { id } }) as Promise<Row | null>,
    files,
  };
  return { rows, storage };
}

/** A one-upload kind's rows as the API creates and reads them: a caller's own, a page at a time. */
export class OneUploadJobRepository<Row extends OneUploadRow, New extends { callerId: number }> {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly spec: Pick<OneUploadKind<JobTableKind>, "model" | "table">,
  ) {}

  /** Writes the row (with `db`: inside that transaction, as a quota's admission does). */
  create(input: New, db: Prisma.TransactionClient = this.prisma): Promise<Row> {
    return delegate<Row>(db, this.spec.model).create({ data: { ...input, status: "running" } }) as Promise<Row>;
  }

  async findForCaller(callerId: number, id: number): Promise<Row | null> {
    const row = await delegate<Row>(this.prisma, this.spec.model).findUnique({ where: { id } });
    return row?.callerId === callerId ? row : null;
  }

  listForCaller(callerId: number, page: PageRequest): Promise<Page<Row>> {
    return readPage<Row>(poolOf(this.prisma), this.spec.table, [{ column: "callerId", value: callerId }], page);
  }

  async markEnqueued(id: number): Promise<void> {
    await delegate<Row>(this.prisma, this.spec.model).updateMany({
      where: { id, enqueuedAt: null },
      data: { enqueuedAt: new Date() },
    });
  }

  count(where: { callerId?: number } = {}): Promise<number> {
    return delegate<Row>(this.prisma, this.spec.model).count({ where }) as Promise<number>;
  }
}
