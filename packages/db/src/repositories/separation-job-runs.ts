import { separationKindOf } from "@mixdown/jobs";
import type { PrismaClient, SeparationJob } from "../generated/prisma/client.ts";
import { endInTransaction, endJobRow, statusTable, type JobTable, type JobTableOptions } from "./job-table.ts";

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
  /** the model that served the job (a comma list for an ensemble) */
  model: string;
  /** the ensemble's algorithm (null or absent: one model) */
  ensemble?: string | null;
}

/**
 * What the worker and the reconciler read and write on a separation row (both separation kinds).
 */
export function separationJobTable(
  prisma: PrismaClient,
  options: JobTableOptions = {},
): JobTable<SeparationJob, SeparationOutputs> {
  return {
    ...statusTable(
      prisma,
      "separationJob",
      (r) => ({ queue: "separation", payload: { kind: separationKindOf(r.kind as SeparationJob["kind"]), jobId: r.id } }),
      { kind: true },
      options,
    ),
    findRunnable: (id) => prisma.separationJob.findFirst({ where: { id, status: "running" } }),
    callerOf: (row) => row.callerId,
    complete: (id, outputs) =>
      endInTransaction(prisma, options, (tx) =>
        endJobRow(tx, "separationJob", id, {
          ...outputs,
          stems: outputs.stems as unknown as object[],
          lossyStems: outputs.lossyStems as unknown as object[],
          status: "success",
          progress: 100,
          errorMessage: null,
        }),
      ),
  };
}
