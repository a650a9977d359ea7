import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ApiKeyRepository, createJobTables, type SeparationOutputs } from "@mixdown/db";
import { assertUnchanged, audio, footprint, multipart, startHarness, type Harness } from "./helpers.ts";

// The worker's own end of a job (the job tables it completes, fails and cancels rows with); the
// worker's end-to-end tests run the same writes from a real worker, killed and redelivered.
let h: Harness;
let tables: ReturnType<typeof createJobTables>;
before(async () => {
  h = await startHarness("s3");
  tables = createJobTables(h.prisma);
});
after(async () => {
  await h?.stop();
});

type Auth = { authorization: string };

const OUTPUTS: SeparationOutputs = {
  vocalKey: "outputs/vocal-separation/0/vocals.wav",
  lossyVocalKey: null,
  backingKey: null,
  stems: [],
  lossyStems: [],
  models: ["vocals"],
};

async function separate(auth: Auth, seconds: number, kind = "vocal-separations") {
  const { payload, headers } = multipart({}, [{ name: "inputFile", filename: "song.wav", content: await audio("wav", seconds) }]);
  return h.app.inject({ method: "POST", url: `/api/kits/v1/${kind}`, payload, headers: { ...headers, ...auth } });
}

async function separated(auth: Auth, seconds: number, kind = "vocal-separations"): Promise<number> {
  const res = await separate(auth, seconds, kind);
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ id: number }>().id;
}

async function usageOf(auth: Auth, month?: string) {
  const res = await h.app.inject({ method: "GET", url: `/api/kits/v1/usage${month ? `?month=${month}` : ""}`, headers: auth });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{
    month: string;
    from: string;
    to: string;
    apiKey: { id: number; prefix: string };
    kinds: Array<{ kind: string; seconds: number; jobs: number }>;
    total: { seconds: number; jobs: number };
    quota: null | { minutes: number; usedSeconds: number; runningSeconds: number; remainingSeconds: number; resetsAt: string };
  }>();
}

const kindOf = (report: Awaited<ReturnType<typeof usageOf>>, kind: string) => report.kinds.find((k) => k.kind === kind)!;

function thisMonth(now = new Date()): { label: string; next: string } {
  const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { label: now.toISOString().slice(0, 7), next: next.toISOString() };
}

async function newQuotaKey(minutes: number) {
  const caller = await h.newCaller();
  await new ApiKeyRepository(h.prisma).setMonthlyQuota(caller.apiKeyId, minutes);
  return caller;
}

describe("usage per key", () => {
  test("a new key has used nothing: every kind at 0, this month, no quota", async () => {
    const caller = await h.newCaller();
    const report = await usageOf(caller.auth);
    const month = thisMonth();
    assert.equal(report.month, month.label);
    assert.equal(report.to, month.next);
    assert.equal(report.apiKey.id, caller.apiKeyId);
    assert.deepEqual(
      report.kinds.map((k) => k.kind),
      [
        "vocal_separation",
        "stem_split",
        "voice_conversion",
        "voice_blend",
        "tts",
        "audio_analysis",
        "vocal_repair",
        "mastering",
        "harmony",
        "pipeline",
      ],
    );
    assert.ok(report.kinds.every((k) => k.seconds === 0 && k.jobs === 0));
    assert.deepEqual(report.total, { seconds: 0, jobs: 0 });
    assert.equal(report.quota, null);
  });

  test("a successful job counts its input's seconds once, however often its end is delivered", async () => {
    const caller = await h.newCaller();
    const id = await separated(caller.auth, 3);
    assert.equal((await h.prisma.separationJob.findUniqueOrThrow({ where: { id } })).audioSeconds, 3);
    assert.equal(await tables.separation.complete(id, OUTPUTS), true);
    // A redelivered or retried attempt completing again changes nothing.
    assert.equal(await tables.separation.complete(id, OUTPUTS), false);
    const report = await usageOf(caller.auth);
    assert.deepEqual(kindOf(report, "vocal_separation"), { kind: "vocal_separation", seconds: 3, jobs: 1 });
    assert.deepEqual(report.total, { seconds: 3, jobs: 1 });
    assert.equal(await h.prisma.usageRecord.count({ where: { rowId: id, jobKind: "vocal_separation" } }), 1);
  });

  test("failed and cancelled jobs count nothing", async () => {
    const caller = await h.newCaller();
    const failed = await separated(caller.auth, 2, "stem-splits");
    const cancelled = await separated(caller.auth, 2, "stem-splits");
    assert.equal(await tables.separation.fail(failed, "the model could not run"), true);
    const res = await h.app.inject({ method: "POST", url: `/api/kits/v1/stem-splits/${cancelled}/cancel`, headers: caller.auth });
    assert.equal(res.statusCode, 200, res.body);
    // A late success of either (a worker that had not heard) is refused and counts nothing.
    assert.equal(await tables.separation.complete(failed, OUTPUTS), false);
    assert.equal(await tables.separation.complete(cancelled, OUTPUTS), false);
    assert.deepEqual((await usageOf(caller.auth)).total, { seconds: 0, jobs: 0 });
    assert.equal(await h.prisma.usageRecord.count({ where: { rowId: { in: [failed, cancelled] } } }), 0);
  });

  test("two keys of one caller each see their own usage", async () => {
    const first = await h.newCaller();
    const created = await new ApiKeyRepository(h.prisma).createApiKey({ name: "second", callerId: first.callerId });
    const second = { authorization: `Bearer ${created.key}` };
    await tables.separation.complete(await separated(first.auth, 2), OUTPUTS);
    await tables.separation.complete(await separated(second, 1), OUTPUTS);
    await tables.separation.complete(await separated(second, 1, "stem-splits"), OUTPUTS);
    const mine = await usageOf(first.auth);
    const theirs = await usageOf(second);
    assert.equal(mine.apiKey.id, first.apiKeyId);
    assert.equal(theirs.apiKey.id, created.id);
    assert.deepEqual(mine.total, { seconds: 2, jobs: 1 });
    assert.deepEqual(theirs.total, { seconds: 2, jobs: 2 });
    assert.deepEqual(kindOf(theirs, "stem_split"), { kind: "stem_split", seconds: 1, jobs: 1 });
  });

  test("usage is per calendar month (UTC): the month a job succeeded in", async () => {
    const caller = await h.newCaller();
    const old = await separated(caller.auth, 2);
    const recent = await separated(caller.auth, 1);
    await tables.separation.complete(old, OUTPUTS);
    await tables.separation.complete(recent, OUTPUTS);
    // As if the first had succeeded on the last second of October 2026.
    await h.prisma.usageRecord.updateMany({
      where: { jobKind: "vocal_separation", rowId: old },
      data: { endedAt: new Date("2026-10-31T23:59:59.999Z") },
    });
    const october = await usageOf(caller.auth, "2026-10");
    assert.equal(october.month, "2026-10");
    assert.equal(october.from, "2026-10-01T00:00:00.000Z");
    assert.equal(october.to, "2026-11-01T00:00:00.000Z");
    assert.deepEqual(october.total, { seconds: 2, jobs: 1 });
    assert.deepEqual((await usageOf(caller.auth)).total, { seconds: 1, jobs: 1 });
    assert.deepEqual((await usageOf(caller.auth, "2026-09")).total, { seconds: 0, jobs: 0 });
  });

  test("a month that is not YYYY-MM is a 422 naming the parameter", async () => {
    const caller = await h.newCaller();
    for (const month of ["2026-13", "2026-1", "november", "2026-11-01"]) {
      const res = await h.app.inject({ method: "GET", url: `/api/kits/v1/usage?month=${month}`, headers: caller.auth });
      assert.equal(res.statusCode, 422, month);
      assert.match(res.json<{ message: string }>().message, /month/);
    }
  });
});

describe("monthly quota per key", () => {
  test("a create over the quota is refused with 429, its reset and Retry-After, and stores nothing", async () => {
    const caller = await newQuotaKey(1);
    await tables.separation.complete(await separated(caller.auth, 40), OUTPUTS);
    const before = await footprint(h);
    const res = await separate(caller.auth, 30);
    assert.equal(res.statusCode, 429, res.body);
    const body = res.json<{ statusCode: number; message: string; quota: Record<string, unknown> }>();
    const month = thisMonth();
    assert.match(body.message, /monthly quota of 1 minutes/);
    assert.match(body.message, new RegExp(`resets at ${month.next}`));
    assert.deepEqual(body.quota, {
      apiKeyId: caller.apiKeyId,
      minutes: 1,
      usedSeconds: 40,
      runningSeconds: 0,
      requestedSeconds: 30,
      remainingSeconds: 20,
      resetsAt: month.next,
    });
    const retryAfter = Number(res.headers["retry-after"]);
    const untilReset = (Date.parse(month.next) - Date.now()) / 1000;
    assert.ok(Math.abs(retryAfter - untilReset) < 5, `Retry-After ${retryAfter}, ${untilReset} s to the reset`);
    await assertUnchanged(h, before);

    // What still fits is taken, and the report says what is left.
    await separated(caller.auth, 20);
    const report = await usageOf(caller.auth);
    assert.deepEqual(report.quota, {
      minutes: 1,
      usedSeconds: 40,
      runningSeconds: 20,
      remainingSeconds: 0,
      resetsAt: month.next,
    });
  });

  test("running jobs hold their seconds: a burst of creates never overruns the quota", async () => {
    const caller = await newQuotaKey(1);
    const answers = await Promise.all(Array.from({ length: 6 }, () => separate(caller.auth, 15)));
    const statuses = answers.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
    const rows = await h.prisma.separationJob.findMany({ where: { apiKeyId: caller.apiKeyId } });
    assert.equal(rows.length, 4);
    // The refused ones' uploads are gone; only the admitted jobs' inputs are stored.
    const stored = new Set(await h.app.ctx.storage.list("uploads/"));
    for (const row of rows) assert.ok(stored.has(row.inputKey));
    assert.equal((await usageOf(caller.auth)).quota?.runningSeconds, 60);
  });

  test("running analyses, repairs and masterings hold their seconds; a running pipeline holds its input's once per step it has not run yet", async () => {
    const caller = await newQuotaKey(10);
    const create = async (kind: string, seconds: number, fields: Record<string, string>, file = "inputFile") => {
      const { payload, headers } = multipart(fields, [
        { name: file, filename: "song.wav", content: await audio("wav", seconds) },
      ]);
      const res = await h.app.inject({
        method: "POST",
        url: `/api/kits/v1/${kind}`,
        payload,
        headers: { ...headers, ...caller.auth },
      });
      assert.ok(res.statusCode === 200 || res.statusCode === 201, res.body);
      return res.json<{ id: number }>().id;
    };
    await create("audio-analyses", 10, {});
    await create("vocal-repairs", 20, { steps: "denoise" });
    await create("masterings", 30, { targetLufs: "-14" }, "targetFile");
    assert.equal((await usageOf(caller.auth)).quota?.runningSeconds, 60);
    // separate, repair, master: three jobs of 5 s each to come, none made yet
    const pipeline = await create("pipelines", 5, {
      steps: JSON.stringify([{ step: "separate" }, { step: "repair", steps: "denoise" }]),
    });
    assert.equal((await usageOf(caller.auth)).quota?.runningSeconds, 70);
    // its first step's job made (as the worker makes it): the step holds its seconds in its own table, not twice
    const first = await create("vocal-separations", 5, {});
    assert.equal((await usageOf(caller.auth)).quota?.runningSeconds, 75);
    await h.prisma.pipelineStep.update({
      where: { pipelineId_index: { pipelineId: pipeline, index: 0 } },
      data: { jobId: first },
    });
    assert.equal((await usageOf(caller.auth)).quota?.runningSeconds, 70);
  });

  test("a failed job gives its seconds back; a text to speech holds an estimate from its text", async () => {
    const caller = await newQuotaKey(1);
    const model = (await h.createModel({ title: "Quota voice", ownerId: caller.callerId })).id;
    const first = await separated(caller.auth, 50);
    const speak = (text: string) =>
      h.app.inject({
        method: "POST",
        url: "/api/kits/v1/tts",
        payload: { voiceModelId: model, inputTtsText: text },
        headers: caller.auth,
      });
    // 240 characters: an estimate of 20 s, over the 10 s left.
    const long = "Every voice has a story to tell. ".repeat(8).slice(0, 240);
    const refused = await speak(long);
    assert.equal(refused.statusCode, 429, refused.body);
    assert.equal(refused.json<{ quota: { requestedSeconds: number } }>().quota.requestedSeconds, 20);
    assert.equal(await h.prisma.ttsJob.count({ where: { apiKeyId: caller.apiKeyId } }), 0);

    await tables.separation.fail(first, "the model could not run");
    const spoken = await speak(long);
    assert.equal(spoken.statusCode, 201, spoken.body);
    const id = spoken.json<{ id: number }>().id;
    // The spoken output's length is what counts once it succeeded.
    await tables.tts.complete(id, { outputKey: "o.wav", lossyOutputKey: "o.mp3", synthesizer: "festival", audioSeconds: 14.5 });
    const report = await usageOf(caller.auth);
    assert.deepEqual(kindOf(report, "tts"), { kind: "tts", seconds: 14.5, jobs: 1 });
    assert.equal(report.quota?.remainingSeconds, 45.5);
  });

  test("a quota set, changed and cleared on an existing key applies to the next create", async () => {
    const caller = await h.newCaller();
    const keys = new ApiKeyRepository(h.prisma);
    await keys.setMonthlyQuota(caller.apiKeyId, 0);
    assert.equal((await separate(caller.auth, 1)).statusCode, 429);
    await keys.setMonthlyQuota(caller.apiKeyId, null);
    assert.equal((await separate(caller.auth, 1)).statusCode, 200);
    assert.equal((await usageOf(caller.auth)).quota, null);
  });
});
