import { separationKindOf } from "@mixdown/jobs";
import { jobOutputKeys } from "@mixdown/jobs";
import type { Prisma, PrismaClient, SeparationJob, SeparationKind } from "../../generated/prisma/client.ts";
import { poolOf } from "../../client.ts";
import { endInTransaction, endJobRow, statusTable, type JobTableRows, type OwnedStorage } from "../job-table.ts";
import { readPage, type Page, type PageRequest } from "../paging.ts";
import { ownedStorage, type JobFiles } from "../job-files.ts";

export interface StoredStem {
  instrument: string;
  key: string;
}

export interface SeparationOutputs {
  /** null when the model has no vocals (a stem split by a model without a vocals stem) */
  vocalKey: string | null;
  lossyVocalKey: string | null;
  backingKey: string | null;
  stems: StoredStem[];
  lossyStems: StoredStem[];
  /** the models that served the job, in order (several: an ensemble) */
  models: string[];
  /** the ensemble's algorithm (null or absent: one model) */
  ensemble?: string | null;
  /** With the row's `analyze`: the input's and each stem's analysis (`{ input, stems }`). */
  analysis?: Prisma.InputJsonValue;
  /** With the row's `outputOptions`: what was written (`@mixdown/jobs`' WrittenOutput). */
  output?: Prisma.InputJsonValue;
}

export interface NewSeparationJob {
  callerId: number;
  kind: SeparationKind;
  inputKey: string;
  inputFormat: string;
  inputFileName?: string | null;
  /** A batch's link: the worker downloads it into `inputKey` before the job runs (null: an upload). */
  inputUrl?: string | null;
  /** The models the caller chose, in order (several: an ensemble); empty or absent: the worker's setting for the kind. */
  models?: string[];
  /** The ensemble's algorithm when `models` names several. */
  ensemble?: string | null;
  /** Whether the input and each stem are analysed after the separation (`analyze=true`). */
  analyze?: boolean;
  /** The create's output options, resolved (`@mixdown/jobs`' OutputOptions); absent: none asked. */
  outputOptions?: Prisma.InputJsonValue;
  /** The input's duration in seconds (what the job counts in its key's usage). */
  audioSeconds?: number | null;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
  /** The batch whose create made the job (`POST /batches`). */
  batchId?: number | null;
}

/** Vocal separation and stem split rows. */
export class SeparationJobRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Writes the row (with `db`: inside that transaction, as a quota's admission does). */
  create(input: NewSeparationJob, db: Prisma.TransactionClient = this.prisma): Promise<SeparationJob> {
    return db.separationJob.create({ data: { ...input, status: "running" } });
  }

  /**
   * The row, only when it belongs to `callerId` and is of `kind`. Read by primary key and checked
   * here: Prisma batches concurrent `findUnique` calls into one query, and the polling path costs
   * 144 µs of CPU a read instead of findFirst's 694 (`./mixdown.sh bench:db-reads`).
   */
  async findForCaller(callerId: number, kind: SeparationKind, id: number): Promise<SeparationJob | null> {
    const row = await this.prisma.separationJob.findUnique({ where: { id } });
    return row && row.callerId === callerId && row.kind === kind ? row : null;
  }

  findById(id: number): Promise<SeparationJob | null> {
    return this.prisma.separationJob.findUnique({ where: { id } });
  }

  listForCaller(callerId: number, kind: SeparationKind, page: PageRequest): Promise<Page<SeparationJob>> {
    const filter = [
      { column: "callerId", value: callerId },
      { column: "kind", value: kind, cast: "SeparationKind" },
    ];
    return readPage<SeparationJob>(poolOf(this.prisma), "SeparationJob", filter, page);
  }

  /**
   * A job made from a link, once the worker has its input: what it is (its format from its bytes,
   * its length, what the job counts in its key's usage). A retry writes the same again.
   */
  async recordDownloadedInput(id: number, input: { inputFormat: string; audioSeconds: number }): Promise<void> {
    await this.prisma.separationJob.updateMany({ where: { id, status: "running" }, data: input });
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.separationJob.updateMany({ where: { id, enqueuedAt: null }, data: { enqueuedAt: new Date() } });
  }

  async delete(id: number): Promise<void> {
    await this.prisma.separationJob.deleteMany({ where: { id } });
  }

  count(where: { callerId?: number; kind?: SeparationKind } = {}): Promise<number> {
    return this.prisma.separationJob.count({ where });
  }
}

const TABLE = { kind: "separation", model: "separationJob", kindColumn: "kind" } as const;

/** The files a separation row keeps: its upload, and its outputs (every stem, whole and lossy) in its folder. */
const FILES: JobFiles = {
  table: "SeparationJob",
  inputColumns: ["inputKey"],
  outputColumns: ["vocalKey", "lossyVocalKey", "backingKey"],
  outputListColumns: ["stems", "lossyStems"],
  kindColumns: ["kind"],
  recordKind: (row) => row.kind as SeparationKind,
  outputPrefix: (row) => jobOutputKeys(separationKindOf(row.kind as SeparationKind), row.id).prefix,
};

/** What a separation row owns in storage (deleted with it). */
export function separationStorage(row: SeparationJob): OwnedStorage {
  return ownedStorage(FILES, row);
}

/** The `separation` kind's rows (both separation kinds share the table): what the worker, the reconciler, /metrics and webhooks read and write. */
export const separationRows: JobTableRows<"separation", SeparationJob, SeparationOutputs, SeparationJob> = {
  kind: "separation",
  model: TABLE.model,
  table: (prisma, options = {}) => ({
    ...statusTable(
      prisma,
      TABLE,
      (r) => ({ queue: "separation", payload: { kind: separationKindOf(r.kind as SeparationJob["kind"]), jobId: r.id } }),
      { kind: true },
      options,
    ),
    findRunnable: (id) => prisma.separationJob.findFirst({ where: { id, status: "running" } }),
    callerOf: (row) => row.callerId,
    complete: (id, outputs) =>
      endInTransaction(prisma, options, async (tx) => {
        const row = await tx.separationJob.findUnique({ where: { id }, select: { kind: true, audioSeconds: true } });
        if (!row) return null;
        return endJobRow(
          tx,
          TABLE,
          id,
          {
            ...outputs,
            stems: outputs.stems as unknown as object[],
            lossyStems: outputs.lossyStems as unknown as object[],
            status: "success",
            progress: 100,
            errorMessage: null,
          },
          { kind: row.kind, seconds: row.audioSeconds },
        );
      }),
  }),
  countByStatus: async (prisma) =>
    (await prisma.separationJob.groupBy({ by: ["kind", "status"], _count: { _all: true } })).map((g) => ({
      kind: g.kind,
      status: g.status,
      count: g._count._all,
    })),
  owned: async (prisma, id) => {
    const row = await prisma.separationJob.findUnique({ where: { id } });
    return row && { callerId: row.callerId, status: row.status, recordKind: row.kind, storage: separationStorage(row) };
  },
  webhookRow: (prisma, id) => prisma.separationJob.findUnique({ where: { id } }),
  files: FILES,
};
