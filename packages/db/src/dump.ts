import pg from "pg";

/**
 * A logical copy of Mixdown's tables, for backups: every row as the JSON PostgreSQL itself writes
 * (`row_to_json`) and reads back (`json_populate_recordset`), so a dump needs no `pg_dump` of the
 * server's version. The schema is not dumped: it is the migrations the dump records, applied again
 * on restore before the rows are loaded.
 */

/** The table Prisma records migrations in; its rows are the dump's migration level, not data. */
const MIGRATIONS_TABLE = "_prisma_migrations";

/** A sequence's position, as `setval(name, lastValue, isCalled)` restores it. */
export interface SequenceState {
  name: string;
  /** bigint as text; null when the sequence was never used. */
  lastValue: string | null;
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** Mixdown's tables in the connection's schema, parents before the tables whose foreign keys name them. */
async function tablesInLoadOrder(client: pg.Client): Promise<string[]> {
  const { rows: tables } = await client.query<{ name: string }>(
    `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename <> $1 ORDER BY tablename`,
    [MIGRATIONS_TABLE],
  );
  const { rows: edges } = await client.query<{ child: string; parent: string }>(
    `SELECT child.relname AS child, parent.relname AS parent
       FROM pg_constraint c
       JOIN pg_class child ON child.oid = c.conrelid
       JOIN pg_class parent ON parent.oid = c.confrelid
      WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace`,
  );
  const parentsOf = new Map(tables.map((t) => [t.name, new Set<string>()]));
  for (const { child, parent } of edges) if (child !== parent) parentsOf.get(child)?.add(parent);
  const ordered: string[] = [];
  const placed = new Set<string>();
  while (ordered.length < tables.length) {
    const next = tables.find((t) => !placed.has(t.name) && [...parentsOf.get(t.name)!].every((p) => placed.has(p)));
    if (!next) throw new Error("The tables' foreign keys form a cycle; they cannot be loaded one table after another.");
    ordered.push(next.name);
    placed.add(next.name);
  }
  return ordered;
}

async function appliedMigrations(client: pg.Client): Promise<string[]> {
  const { rows: present } = await client.query<{ exists: boolean }>(
    `SELECT to_regclass(quote_ident(current_schema()) || '.' || quote_ident($1)) IS NOT NULL AS exists`,
    [MIGRATIONS_TABLE],
  );
  if (!present[0]!.exists) return [];
  const { rows } = await client.query<{ migration_name: string }>(
    `SELECT migration_name FROM ${quoteIdent(MIGRATIONS_TABLE)}
      WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL ORDER BY migration_name`,
  );
  return rows.map((r) => r.migration_name);
}

/**
 * One consistent view of the whole database while the service keeps running: a REPEATABLE READ
 * READ ONLY transaction, so every table is read as of the same instant, jobs being written
 * meanwhile included or not as a whole. Sequences are read just after the snapshot is taken (they
 * are not transactional): at least the highest id the snapshot holds.
 */
export class DatabaseSnapshot {
  private cursors = 0;

  private constructor(
    private readonly client: pg.Client,
    /** Applied migrations, in order: the schema the rows belong to. */
    readonly migrations: string[],
    /** In load order (parents first). */
    readonly tables: string[],
    readonly sequences: SequenceState[],
  ) {}

  static async open(databaseUrl: string): Promise<DatabaseSnapshot> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      // The transaction's first query takes its snapshot.
      const tables = await tablesInLoadOrder(client);
      const migrations = await appliedMigrations(client);
      const { rows: sequences } = await client.query<{ name: string; last_value: string | null }>(
        `SELECT sequencename AS name, last_value::text AS last_value FROM pg_sequences
          WHERE schemaname = current_schema() ORDER BY sequencename`,
      );
      return new DatabaseSnapshot(
        client,
        migrations,
        tables,
        sequences.map((s) => ({ name: s.name, lastValue: s.last_value })),
      );
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
  }

  /** A table's rows as JSON texts, a batch at a time (a server-side cursor: never the whole table in memory). */
  async *rows(table: string, batchRows = 500): AsyncGenerator<string[]> {
    const cursor = `mixdown_dump_${++this.cursors}`;
    await this.client.query(
      `DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT row_to_json(t)::text AS row FROM ${quoteIdent(table)} t`,
    );
    for (;;) {
      const { rows } = await this.client.query<{ row: string }>(`FETCH ${batchRows} FROM ${cursor}`);
      if (rows.length === 0) break;
      yield rows.map((r) => r.row);
    }
    await this.client.query(`CLOSE ${cursor}`);
  }

  async close(): Promise<void> {
    await this.client.query("COMMIT").catch(() => undefined);
    await this.client.end();
  }
}

/** The connection schema's tables (the migrations' own aside), each with whether it holds a row. */
export async function installedTables(databaseUrl: string): Promise<{ name: string; hasRows: boolean }[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ name: string }>(
      `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename <> $1 ORDER BY tablename`,
      [MIGRATIONS_TABLE],
    );
    const result: { name: string; hasRows: boolean }[] = [];
    for (const { name } of tables) {
      const { rows } = await client.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${quoteIdent(name)}) AS any`);
      result.push({ name, hasRows: rows[0]!.any });
    }
    return result;
  } finally {
    await client.end();
  }
}

/**
 * Drops every table (the migrations' record included) and enum type of the connection's schema:
 * what the migrations made, so they can be applied again from the first.
 */
export async function resetDatabase(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query("BEGIN");
    const { rows: tables } = await client.query<{ name: string }>(
      `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()`,
    );
    if (tables.length > 0) await client.query(`DROP TABLE ${tables.map((t) => quoteIdent(t.name)).join(", ")} CASCADE`);
    const { rows: types } = await client.query<{ name: string }>(
      `SELECT typname AS name FROM pg_type WHERE typnamespace = current_schema()::regnamespace AND typtype = 'e'`,
    );
    if (types.length > 0) await client.query(`DROP TYPE ${types.map((t) => quoteIdent(t.name)).join(", ")} CASCADE`);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
}

/**
 * Loads a dump's rows, ids included, into a database at the dump's migration level, in one
 * transaction: nothing is visible (and nothing stays) until `commit`.
 */
export class DatabaseRestore {
  private readonly loaded = new Map<string, number>();

  private constructor(
    private readonly client: pg.Client,
    private readonly tables: ReadonlySet<string>,
  ) {}

  static async begin(databaseUrl: string): Promise<DatabaseRestore> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query("BEGIN");
      const { rows } = await client.query<{ name: string }>(
        `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename <> $1`,
        [MIGRATIONS_TABLE],
      );
      return new DatabaseRestore(client, new Set(rows.map((r) => r.name)));
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
  }

  /** Inserts rows given as the JSON texts `DatabaseSnapshot.rows` yields. */
  async insert(table: string, rows: string[]): Promise<void> {
    if (!this.tables.has(table)) {
      throw new Error(`The dump has rows of table "${table}", which its migrations do not create.`);
    }
    if (rows.length === 0) return;
    const name = quoteIdent(table);
    await this.client.query(`INSERT INTO ${name} SELECT * FROM json_populate_recordset(NULL::${name}, $1::json)`, [
      `[${rows.join(",")}]`,
    ]);
    this.loaded.set(table, (this.loaded.get(table) ?? 0) + rows.length);
  }

  /** Rows inserted so far, by table. */
  rowsLoaded(table: string): number {
    return this.loaded.get(table) ?? 0;
  }

  async setSequences(sequences: readonly SequenceState[]): Promise<void> {
    for (const sequence of sequences) {
      const target = quoteIdent(sequence.name);
      if (sequence.lastValue === null) await this.client.query(`SELECT setval($1::regclass, 1, false)`, [target]);
      else await this.client.query(`SELECT setval($1::regclass, $2::bigint, true)`, [target, sequence.lastValue]);
    }
  }

  async commit(): Promise<void> {
    try {
      await this.client.query("COMMIT");
    } finally {
      await this.client.end();
    }
  }

  async rollback(): Promise<void> {
    await this.client.query("ROLLBACK").catch(() => undefined);
    await this.client.end().catch(() => undefined);
  }
}
