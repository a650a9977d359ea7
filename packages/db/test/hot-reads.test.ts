import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  ApiKeyRepository,
  applyMigrations,
  createPrismaClient,
  type PrismaClient,
  SeparationJobRepository,
  VoiceBlendJobRepository,
  VoiceConversionJobRepository,
  VoiceModelRepository,
} from "../src/index.ts";
import { startTestCluster, type TestCluster } from "./postgres.ts";

// The API's polling reads skip Prisma's costly paths (a page and its total on node-postgres, a job
// by primary key with its owner checked in code). These tests hold them to what Prisma's own
// queries return for the same rows, field for field.

let cluster: TestCluster;
let prisma: PrismaClient;
let alice: number;
let bob: number;

before(async () => {
  cluster = await startTestCluster();
  const url = await cluster.freshDatabase();
  await applyMigrations(url);
  prisma = createPrismaClient(url);
  const keys = new ApiKeyRepository(prisma);
  alice = (await keys.createApiKey({ name: "alice" })).callerId;
  bob = (await keys.createApiKey({ name: "bob" })).callerId;
});
after(async () => {
  await prisma?.$disconnect();
  await cluster.stop();
});

const PAGES = [
  { page: 1, perPage: 10, order: "desc" as const },
  { page: 2, perPage: 10, order: "desc" as const },
  { page: 1, perPage: 7, order: "asc" as const },
  { page: 3, perPage: 7, order: "asc" as const },
  { page: 9, perPage: 10, order: "desc" as const },
];

describe("hot reads", () => {
  test("a page of separations is Prisma's findMany + count, for every caller, kind, order and page", async () => {
    const repo = new SeparationJobRepository(prisma);
    for (let i = 0; i < 23; i++) {
      const row = await repo.create({
        callerId: i % 3 === 0 ? bob : alice,
        kind: i % 4 === 0 ? "stem_split" : "vocal_separation",
        inputKey: `in/${i}.wav`,
        inputFormat: "wav",
        inputFileName: i % 2 ? `song ${i}.wav` : null,
        // an ensemble's list, one model's, and none (the column's default: the worker's setting)
        models: i % 5 === 0 ? ["vocals", "stems"] : i % 5 === 1 ? ["six"] : undefined,
        ensemble: i % 5 === 0 ? "median_wave" : null,
      });
      if (i % 2 === 0) {
        await prisma.separationJob.update({
          where: { id: row.id },
          data: {
            status: i % 6 === 0 ? "error" : "success",
            errorMessage: i % 6 === 0 ? "it broke" : null,
            jobEndTime: new Date(Date.UTC(2026, 10, 26, 3, i, 1, 123)),
            vocalKey: `out/${row.id}/vocals.wav`,
            stems: [{ instrument: "bass", key: `out/${row.id}/bass.wav` }],
            lossyStems: [{ instrument: "bass", key: `out/${row.id}/bass.mp3` }],
            progress: 100,
          },
        });
      }
    }
    for (const callerId of [alice, bob, 999_999]) {
      for (const kind of ["vocal_separation", "stem_split"] as const) {
        for (const page of PAGES) {
          const where = { callerId, kind };
          const expected = {
            rows: await prisma.separationJob.findMany({
              where,
              orderBy: { id: page.order },
              skip: (page.page - 1) * page.perPage,
              take: page.perPage,
            }),
            total: await prisma.separationJob.count({ where }),
          };
          assert.deepStrictEqual(
            await repo.listForCaller(callerId, kind, page),
            expected,
            `${callerId} ${kind} ${JSON.stringify(page)}`,
          );
        }
      }
    }
  });

  test("a page of conversions carries each job's voice model as Prisma's include does", async () => {
    const models = new VoiceModelRepository(prisma);
    const a = await models.create({
      title: "A",
      architecture: "native",
      sampleRate: 40000,
      tags: ["x", "y z"],
      metadata: { pitch: 1.5 },
    });
    const b = await models.create({ title: "B", architecture: "rvc", sampleRate: 48000, ownerId: alice });
    const repo = new VoiceConversionJobRepository(prisma);
    for (let i = 0; i < 15; i++) {
      await repo.create({
        callerId: i % 4 === 0 ? bob : alice,
        voiceModelId: i % 2 ? a.id : b.id,
        inputKey: `in/${i}.wav`,
        inputFormat: "wav",
        params: { pitchShift: i - 7, post: { reverb: { room_size: 0.3 } } },
      });
    }
    for (const callerId of [alice, bob, 999_999]) {
      for (const page of PAGES) {
        const expected = {
          rows: await prisma.voiceConversionJob.findMany({
            where: { callerId },
            include: { voiceModel: true },
            orderBy: { id: page.order },
            skip: (page.page - 1) * page.perPage,
            take: page.perPage,
          }),
          total: await prisma.voiceConversionJob.count({ where: { callerId } }),
        };
        assert.deepStrictEqual(await repo.listForCaller(callerId, page), expected, `${callerId} ${JSON.stringify(page)}`);
      }
    }
  });

  test("a job by id is found only by its caller (and, for separations, under its kind); a page of blends is Prisma's", async () => {
    const separations = new SeparationJobRepository(prisma);
    const job = await separations.create({ callerId: alice, kind: "stem_split", inputKey: "in/x.wav", inputFormat: "wav" });
    assert.deepStrictEqual(
      await separations.findForCaller(alice, "stem_split", job.id),
      await prisma.separationJob.findUnique({ where: { id: job.id } }),
    );
    assert.equal(await separations.findForCaller(bob, "stem_split", job.id), null);
    assert.equal(await separations.findForCaller(alice, "vocal_separation", job.id), null);
    assert.equal(await separations.findForCaller(alice, "stem_split", 2_000_000_000), null);

    const model = await new VoiceModelRepository(prisma).create({ title: "C", architecture: "native", sampleRate: 40000 });
    const conversions = new VoiceConversionJobRepository(prisma);
    const conversion = await conversions.create({
      callerId: bob,
      voiceModelId: model.id,
      inputKey: "in/y.wav",
      inputFormat: "wav",
      params: {},
    });
    assert.equal((await conversions.findForCaller(bob, conversion.id))?.voiceModel.title, "C");
    assert.equal(await conversions.findForCaller(alice, conversion.id), null);

    const other = await new VoiceModelRepository(prisma).create({ title: "D", architecture: "native", sampleRate: 40000 });
    const blends = new VoiceBlendJobRepository(prisma);
    const { job: blend } = await blends.create({
      callerId: alice,
      modelIds: [model.id, other.id],
      alphas: [0.5, 0.5],
      title: "C + D",
      architecture: "native",
      sampleRate: 40000,
    });
    assert.equal((await blends.findForCaller(alice, blend.id))?.id, blend.id);
    for (const page of PAGES) {
      const expected = {
        rows: await prisma.voiceBlendJob.findMany({
          where: { callerId: alice },
          orderBy: { id: page.order },
          skip: (page.page - 1) * page.perPage,
          take: page.perPage,
        }),
        total: await prisma.voiceBlendJob.count({ where: { callerId: alice } }),
      };
      assert.deepStrictEqual(await blends.listForCaller(alice, page), expected);
    }
    assert.equal(await blends.findForCaller(bob, blend.id), null);
  });
});
