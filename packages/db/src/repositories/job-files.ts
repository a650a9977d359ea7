import type { JobTableKind, RecordKind } from "@mixdown/jobs";
import type { PrismaClient } from "../generated/prisma/client.ts";
import { poolOf } from "../client.ts";
import type { OwnedStorage } from "./job-table.ts";

/**
 * The files a job table's rows keep in object storage, declared once per kind beside its rows
 * (`JobTableRows.files`): what the retention sweep takes when they expire, and what deleting a job
 * removes. A job's outputs all live under its output folder, `outputs/<outputKind>/<id>/`
 * (`@mixdown/storage`'s jobOutputKeys); the key columns name the ones its record links to.
 */
export interface JobFiles {
  /** The table, as SQL names it. */
  table:
    | "SeparationJob"
    | "VoiceConversionJob"
    | "TtsJob"
    | "AudioAnalysisJob"
    | "VocalRepairJob"
    | "MasteringJob"
    | "HarmonyJob"
    | "Pipeline";
  /** Columns holding the keys of the uploads the job read (an input, a backing track): none for a kind without uploads. */
  inputColumns: readonly string[];
  /** Columns holding output keys (nulled when the outputs expire). */
  outputColumns: readonly string[];
  /** JSON columns of `[{ instrument, key }]` outputs (emptied when the outputs expire). */
  outputListColumns: readonly string[];
  /** The columns besides `id` that `recordKind` and `outputPrefix` read (a separation's `kind`). */
  kindColumns: readonly string[];
  /** A row's record kind (`vocal_separation`, `tts`), for the metrics. */
  recordKind(row: Record<string, unknown>): RecordKind;
  /** A row's output folder, `outputs/<kind>/<id>/` (`@mixdown/storage`'s jobOutputKeys). */
  outputPrefix(row: Record<string, unknown> & { id: number }): string;
}

/**
 * Everything a row owns in storage, as a deletion removes it: the keys its columns name (uploads
 * and outputs) and its output folder, whatever else an attempt left there.
 */
export function ownedStorage(files: JobFiles, row: { id: number }): OwnedStorage {
  // a Prisma row of the kind's table: its columns read by name, as the sweep reads them from SQL
  const columns = row as Record<string, unknown> & { id: number };
  return {
    keys: keysOf(columns, [...files.inputColumns, ...files.outputColumns], files.outputListColumns),
    prefixes: [files.outputPrefix(columns)],
  };
}

/** Which of a job's files the retention sweep takes in one step. */
export type RetentionStep = "inputs" | "outputs";

/** An ended job whose inputs or outputs are due for deletion. */
export interface ExpiringJob {
  kind: JobTableKind;
  id: number;
  recordKind: RecordKind;
  /** Its output folder (`outputs/<kind>/<id>/`). */
  outputPrefix: string;
  /** The keys its columns name for the step (inputs, or the outputs its record links to). */
  keys: string[];
}

const q = (column: string) => `"${column}"`;
const EXPIRED_AT: Record<RetentionStep, string> = { inputs: q("inputsExpiredAt"), outputs: q("outputsExpiredAt") };

/** The keys a row's columns name (text columns and `[{ key }]` lists), each once. */
function keysOf(row: Record<string, unknown>, columns: readonly string[], listColumns: readonly string[]): string[] {
  const keys = new Set<string>();
  for (const column of columns) if (typeof row[column] === "string" && row[column]) keys.add(row[column] as string);
  for (const column of listColumns) {
    const list = row[column];
    if (!Array.isArray(list)) continue;
    for (const entry of list)
      if (entry && typeof entry === "object" && typeof (entry as { key?: unknown }).key === "string")
        keys.add((entry as { key: string }).key);
  }
  return [...keys];
}

/**
 * The database side of the retention sweep. A step deletes the files first and marks the rows
 * after (`markExpired`), so a sweep killed between the two leaves rows that the next sweep finds
 * again and deletes again (deleting an absent object is not an error): nothing is orphaned, and a
 * record never says its files are gone while they are still stored. Only ended jobs are read
 * (a running job's row has no `jobEndTime`, and its status is checked besides).
 */
export class JobRetention {
  constructor(private readonly prisma: PrismaClient) {}

  /** The ended jobs of `kind` whose `step` files are still stored and whose end is before `endedBefore`, oldest end first. */
  async due(kind: JobTableKind, files: JobFiles, step: RetentionStep, endedBefore: Date, take: number): Promise<ExpiringJob[]> {
    const columns = step === "inputs" ? files.inputColumns : files.outputColumns;
    const listColumns = step === "inputs" ? [] : files.outputListColumns;
    if (step === "inputs" && columns.length === 0) return [];
    const selected = ["id", ...files.kindColumns, ...columns, ...listColumns].map(q).join(", ");
    const { rows } = await poolOf(this.prisma).query<Record<string, unknown> & { id: number }>(
      `SELECT ${selected}
         FROM ${q(files.table)}
        WHERE ${EXPIRED_AT[step]} IS NULL AND "jobEndTime" < $1 AND status <> 'running'
        ORDER BY "jobEndTime", id
        LIMIT $2`,
      [endedBefore, take],
    );
    return rows.map((row) => ({
      kind,
      id: row.id,
      recordKind: files.recordKind(row),
      outputPrefix: files.outputPrefix(row),
      keys: keysOf(row, columns, listColumns),
    }));
  }

  /**
   * The ended jobs of a table whose end is before `endedBefore`, oldest end first: rows whose
   * time (RETENTION_JOB_MINUTES) is up, to be deleted with what they still own.
   */
  async rowsDue(files: JobFiles, endedBefore: Date, take: number): Promise<number[]> {
    const { rows } = await poolOf(this.prisma).query<{ id: number }>(
      `SELECT id FROM ${q(files.table)} WHERE "jobEndTime" < $1 AND status <> 'running' ORDER BY "jobEndTime", id LIMIT $2`,
      [endedBefore, take],
    );
    return rows.map((row) => row.id);
  }

  /**
   * Marks `ids` as having lost their `step` files at `at` (outputs: their key columns nulled and
   * stem lists emptied, so records present null URLs). Only rows not yet marked; returns how many.
   */
  async markExpired(files: JobFiles, step: RetentionStep, ids: readonly number[], at: Date): Promise<number> {
    if (ids.length === 0) return 0;
    const cleared =
      step === "outputs"
        ? [...files.outputColumns.map((c) => `${q(c)} = NULL`), ...files.outputListColumns.map((c) => `${q(c)} = '[]'::jsonb`)]
        : [];
    const { rowCount } = await poolOf(this.prisma).query(
      `UPDATE ${q(files.table)} SET ${[`${EXPIRED_AT[step]} = $2`, ...cleared].join(", ")}
        WHERE id = ANY($1::int[]) AND ${EXPIRED_AT[step]} IS NULL AND status <> 'running'`,
      [ids, at],
    );
    return rowCount ?? 0;
  }
}
