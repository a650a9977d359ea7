import { createHash } from "node:crypto";
import type { Pool, QueryResultRow } from "pg";
import { rethrowDatabaseError } from "../outage.ts";

export interface PageRequest {
  /** 1-based page number. */
  page: number;
  perPage: number;
  /** Direction on `id` (ids grow with creation time, so this is also creation order). */
  order: "asc" | "desc";
}

export interface Page<T> {
  rows: T[];
  total: number;
}

export function pageArgs(request: PageRequest): { orderBy: { id: "asc" | "desc" }; skip: number; take: number } {
  return { orderBy: { id: request.order }, skip: (request.page - 1) * request.perPage, take: request.perPage };
}

/** Column filters of a page read: fixed column names from the repository, values as parameters. */
export type PageFilter = Array<{ column: string; value: unknown; cast?: string }>;

/**
 * A page of `table`'s rows matching `filter` (ordered by id) and their total, as two prepared
 * statements on node-postgres. Prisma's findMany + count cost ~3x the CPU for the same rows
 * (`./mixdown.sh bench:db-reads`), and lists are what dashboards and pollers read most. The rows
 * are what Prisma returns for the same table: timestamps as Date, Json parsed, enums as strings
 * (the repositories' tests compare both).
 */
export async function readPage<T>(pool: Pool, table: string, filter: PageFilter, request: PageRequest): Promise<Page<T>> {
  const where = filter.map((f, i) => `"${f.column}" = $${i + 1}${f.cast ? `::"${f.cast}"` : ""}`).join(" AND ");
  const values = filter.map((f) => f.value);
  const order = request.order === "asc" ? "ASC" : "DESC";
  const n = values.length;
  const rows = `SELECT * FROM "${table}" WHERE ${where} ORDER BY id ${order} LIMIT $${n + 1} OFFSET $${n + 2}`;
  const count = `SELECT count(*)::int AS total FROM "${table}" WHERE ${where}`;
  const [page, total] = await Promise.all([
    pool.query<T & QueryResultRow>({
      name: statementName(rows),
      text: rows,
      values: [...values, request.perPage, (request.page - 1) * request.perPage],
    }),
    pool.query<{ total: number }>({ name: statementName(count), text: count, values }),
  ]).catch(rethrowDatabaseError);
  return { rows: page.rows, total: total.rows[0]!.total };
}

/** Rows of `table` by id, in no particular order (prepared; for a page's relations). */
export async function readByIds<T extends { id: number }>(pool: Pool, table: string, ids: number[]): Promise<Map<number, T>> {
  if (ids.length === 0) return new Map();
  const text = `SELECT * FROM "${table}" WHERE id = ANY($1::int[])`;
  const { rows } = await pool
    .query<T & QueryResultRow>({ name: statementName(text), text, values: [[...new Set(ids)]] })
    .catch(rethrowDatabaseError);
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * A page of a caller's rows of a job table whose rows name a voice model (voice conversions, text
 * to speech), each with its model: two prepared reads and one more, not a join per row.
 */
export async function readCallerPageWithVoiceModels<R extends { voiceModelId: number }, M extends { id: number }>(
  pool: Pool,
  table: string,
  callerId: number,
  request: PageRequest,
): Promise<Page<R & { voiceModel: M }>> {
  const { rows, total } = await readPage<R>(pool, table, [{ column: "callerId", value: callerId }], request);
  const models = await readByIds<M>(
    pool,
    "VoiceModel",
    rows.map((r) => r.voiceModelId),
  );
  return { rows: rows.map((r) => ({ ...r, voiceModel: models.get(r.voiceModelId)! })), total };
}

/** A prepared statement's name: one per distinct text (node-postgres prepares it once per connection). */
function statementName(text: string): string {
  return `mixdown_${createHash("sha1").update(text).digest("hex").slice(0, 16)}`;
}
