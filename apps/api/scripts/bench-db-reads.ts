/**
 * The API's hot reads, side by side on one throwaway PostgreSQL: each way of reading a job by id
 * and a page of 10 (Prisma's findFirst, findUnique, findMany + count, $queryRaw, node-postgres with
 * and without a prepared statement), 16 at a time as the API serves them. Prints queries/s and
 * this process's CPU per read, which is what the API pays (PostgreSQL's own share is not counted).
 *
 *   ./mixdown.sh bench:db-reads [--reads 4000]
 */
import { parseArgs } from "node:util";
import pg from "pg";
import { startTestStack } from "@mixdown/devstack";
import { ApiKeyRepository, createPrismaClient, SeparationJobRepository } from "@mixdown/db";

const { values } = parseArgs({ options: { reads: { type: "string", default: "4000" } } });
const reads = Number(values.reads);

const stack = await startTestStack({ storage: "local" });
const prisma = createPrismaClient(stack.env.DATABASE_URL!);
const pool = new pg.Pool({ connectionString: stack.env.DATABASE_URL!, max: 10 });
try {
  const { callerId } = await new ApiKeyRepository(prisma).createApiKey({ name: "bench" });
  const repo = new SeparationJobRepository(prisma);
  let id = 0;
  for (let i = 0; i < 50; i++)
    ({ id } = await repo.create({ callerId, kind: "vocal_separation", inputKey: `in/${i}`, inputFormat: "wav" }));
  const kind = "vocal_separation" as const;

  async function time(name: string, read: () => Promise<unknown>): Promise<void> {
    for (let i = 0; i < 300; i++) await read();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let left = reads;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (left-- > 0) await read();
      }),
    );
    const cpu = process.cpuUsage(cpu0);
    const seconds = (performance.now() - t0) / 1000;
    console.log(`| ${name} | ${(reads / seconds).toFixed(0)} | ${((cpu.user + cpu.system) / reads).toFixed(0)} |`);
  }

  const one = 'SELECT * FROM "SeparationJob" WHERE id = $1 AND "callerId" = $2 AND kind = $3::"SeparationKind"';
  const page =
    'SELECT * FROM "SeparationJob" WHERE "callerId" = $1 AND kind = $2::"SeparationKind" ORDER BY id DESC LIMIT 10 OFFSET 0';
  const count = 'SELECT count(*)::int AS total FROM "SeparationJob" WHERE "callerId" = $1 AND kind = $2::"SeparationKind"';
  console.log(`\nReads of one job and of a page of 10, ${reads} each, 16 at a time, node ${process.version}\n`);
  console.log("| read | reads/s | this process's CPU µs/read |");
  console.log("| --- | --- | --- |");
  await time("one: Prisma findFirst (id, caller, kind)", () => prisma.separationJob.findFirst({ where: { id, callerId, kind } }));
  await time("one: Prisma findUnique (id, caller, kind)", () =>
    prisma.separationJob.findUnique({ where: { id, callerId, kind } }),
  );
  await time("one: Prisma findUnique (id), owner checked in code", () => repo.findForCaller(callerId, kind, id));
  await time("one: Prisma $queryRawUnsafe", () => prisma.$queryRawUnsafe(one, id, callerId, kind));
  await time("one: node-postgres", () => pool.query(one, [id, callerId, kind]));
  await time("one: node-postgres, prepared", () => pool.query({ name: "one", text: one, values: [id, callerId, kind] }));
  const where = { callerId, kind };
  await time("page: Prisma findMany + count", () =>
    Promise.all([
      prisma.separationJob.findMany({ where, orderBy: { id: "desc" }, take: 10, skip: 0 }),
      prisma.separationJob.count({ where }),
    ]),
  );
  await time("page: the repository's listForCaller", () =>
    repo.listForCaller(callerId, kind, { page: 1, perPage: 10, order: "desc" }),
  );
  await time("page: node-postgres, prepared", () =>
    Promise.all([
      pool.query({ name: "page", text: page, values: [callerId, kind] }),
      pool.query({ name: "count", text: count, values: [callerId, kind] }),
    ]),
  );
} finally {
  await pool.end();
  await prisma.$disconnect();
  await stack.stop();
}
