import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ApiKeyRepository, SeparationJobRepository } from "@mixdown/db";
import { bullJobId } from "@mixdown/queue";
import { assertUnchanged, audio, footprint, multipart, sortedKeys, startHarness, TIMESTAMP, type Harness } from "./helpers.ts";

let h: Harness;
before(async () => {
  h = await startHarness("s3");
});
after(async () => {
  await h?.stop();
});

const SEPARATION_KEYS = [
  "backingAudioFileUrl",
  "createdAt",
  "ensemble",
  "errorMessage",
  "id",
  "jobEndTime",
  "jobStartTime",
  "lossyStemFileUrls",
  "lossyVocalAudioFileUrl",
  "model",
  "outputsExpireAt",
  "outputsExpiredAt",
  "progress",
  "status",
  "stemFileUrls",
  "type",
  "vocalAudioFileUrl",
];

function assertNewSeparation(record: Record<string, unknown>): void {
  assert.deepEqual(sortedKeys(record), SEPARATION_KEYS);
  assert.equal(typeof record.id, "number");
  assert.equal(record.type, "separate");
  assert.equal(record.status, "running");
  assert.match(record.createdAt as string, TIMESTAMP);
  assert.match(record.jobStartTime as string, TIMESTAMP);
  assert.equal(record.jobEndTime, null);
  assert.equal(record.vocalAudioFileUrl, null);
  assert.equal(record.lossyVocalAudioFileUrl, null);
  assert.equal(record.backingAudioFileUrl, null);
  assert.deepEqual(record.stemFileUrls, []);
  assert.deepEqual(record.lossyStemFileUrls, []);
  // a running job's outputs have no expiry yet
  assert.equal(record.outputsExpireAt, null);
  assert.equal(record.outputsExpiredAt, null);
  assert.equal(record.progress, 0);
  assert.equal(record.errorMessage, null);
  assert.equal(record.model, null, "a create that names no model leaves it to the worker's setting");
}

function assertErrorBody(body: Record<string, unknown>, statusCode: number, pattern: RegExp): void {
  assert.deepEqual(sortedKeys(body), ["error", "message", "statusCode"]);
  assert.equal(body.statusCode, statusCode);
  assert.equal(typeof body.error, "string");
  assert.match(body.message as string, pattern);
  assert.doesNotMatch(JSON.stringify(body), /\bat .*\.(ts|js):\d+/, "no stack in error bodies");
}

async function upload(path: string, auth: Record<string, string>, content: Buffer, filename = "track.wav", field = "inputFile") {
  const form = multipart({}, [{ name: field, filename, content }]);
  return h.app.inject({
    method: "POST",
    url: `/api/kits/v1/${path}`,
    headers: { ...form.headers, ...auth },
    payload: form.payload,
  });
}

describe("creating separation jobs", () => {
  test("a wav named x.mp3 is accepted as wav: 200, the interface's record, row + object + queue entry", async () => {
    const caller = await h.newCaller();
    const res = await upload("vocal-separations", caller.auth, await audio("wav"), "x.mp3");
    assert.equal(res.statusCode, 200, res.body);
    const record = res.json();
    assertNewSeparation(record);

    const row = await new SeparationJobRepository(h.prisma).findById(record.id);
    assert.equal(row?.kind, "vocal_separation");
    assert.equal(row?.inputFormat, "wav");
    assert.equal(row?.callerId, caller.callerId);
    assert.notEqual(row?.enqueuedAt, null, "enqueuedAt is set once the queue entry exists");
    assert.match(row!.inputKey, /^uploads\/vocal-separation\/[0-9a-f-]{36}\.wav$/);
    assert.equal(await h.app.ctx.storage.exists(row!.inputKey), true);
    const job = await h.app.ctx.queues.queue("separation").getJob(bullJobId("separation", record.id));
    assert.deepEqual(job?.data, { kind: "vocal-separation", jobId: record.id });

    const fetched = await h.app.inject({
      method: "GET",
      url: `/api/kits/v1/vocal-separations/${record.id}`,
      headers: caller.auth,
    });
    assert.equal(fetched.statusCode, 200);
    assert.deepEqual(fetched.json(), record);
  });

  for (const format of ["mp3", "flac", "webm", "id3flac"] as const) {
    test(`a stem split accepts ${format} (decided from the bytes, file named .bin)`, async () => {
      const caller = await h.newCaller();
      const res = await upload("stem-splits", caller.auth, await audio(format), "upload.bin");
      assert.equal(res.statusCode, 200, res.body);
      assertNewSeparation(res.json());
      const row = await new SeparationJobRepository(h.prisma).findById(res.json().id);
      assert.equal(row?.kind, "stem_split");
      assert.equal(row?.inputFormat, format === "id3flac" ? "flac" : format);
      const job = await h.app.ctx.queues.queue("separation").getJob(bullJobId("separation", row!.id));
      assert.deepEqual(job?.data, { kind: "stem-split", jobId: row!.id });
    });
  }

  test("a stem split id is not a vocal separation id (404 across kinds)", async () => {
    const caller = await h.newCaller();
    const res = await upload("stem-splits", caller.auth, await audio("wav"));
    const id = res.json().id;
    const other = await h.app.inject({ method: "GET", url: `/api/kits/v1/vocal-separations/${id}`, headers: caller.auth });
    assert.equal(other.statusCode, 404);
    assert.equal(
      (await h.app.inject({ method: "GET", url: `/api/kits/v1/stem-splits/${id}`, headers: caller.auth })).statusCode,
      200,
    );
  });
});

describe("rejected uploads leave nothing behind", () => {
  const cases: Array<{ name: string; status: number; message: RegExp; make: () => Promise<Buffer>; filename: string }> = [
    {
      name: "text named x.wav",
      status: 415,
      message: /inputFile must be wav, webm, mp3 or flac/,
      make: async () => Buffer.from("hello, this is not audio at all\n".repeat(20)),
      filename: "x.wav",
    },
    { name: "ogg/vorbis named x.flac", status: 415, message: /inputFile must be/, make: () => audio("ogg"), filename: "x.flac" },
    {
      name: "Matroska audio (not the WebM profile)",
      status: 415,
      message: /Matroska/,
      make: () => audio("mka"),
      filename: "x.webm",
    },
    {
      name: "a RIFF/WAVE header followed by garbage",
      status: 422,
      message: /inputFile (is not decodable|has no audio)/,
      make: async () => Buffer.concat([Buffer.from("RIFF\x24\x00\x00\x00WAVEjunk", "latin1"), Buffer.alloc(2000, 0x55)]),
      filename: "x.wav",
    },
    { name: "an empty file", status: 422, message: /inputFile is empty/, make: async () => Buffer.alloc(0), filename: "x.wav" },
  ];
  for (const c of cases) {
    test(`${c.name} → ${c.status}`, async () => {
      const caller = await h.newCaller();
      const before = await footprint(h);
      const res = await upload("vocal-separations", caller.auth, await c.make(), c.filename);
      assert.equal(res.statusCode, c.status, res.body);
      assertErrorBody(res.json(), c.status, c.message);
      await assertUnchanged(h, before);
    });
  }

  test("a missing inputFile part → 422 naming it", async () => {
    const caller = await h.newCaller();
    const before = await footprint(h);
    const res = await upload("stem-splits", caller.auth, await audio("wav"), "a.wav", "somethingElse");
    assert.equal(res.statusCode, 422);
    assertErrorBody(res.json(), 422, /inputFile is required/);
    await assertUnchanged(h, before);
  });

  test("a JSON body instead of multipart → 400", async () => {
    const caller = await h.newCaller();
    const res = await h.app.inject({
      method: "POST",
      url: "/api/kits/v1/vocal-separations",
      headers: caller.auth,
      payload: { inputFile: "x" },
    });
    assert.equal(res.statusCode, 400);
    assertErrorBody(res.json(), 400, /multipart\/form-data/);
  });

  test("rejects a 51 MB upload with 413 and stores nothing", async () => {
    const caller = await h.newCaller();
    const wav = await audio("wav");
    const big = Buffer.concat([wav, Buffer.alloc(51 * 1024 * 1024 - wav.length)]);
    const before = await footprint(h);
    const res = await upload("vocal-separations", caller.auth, big);
    assert.equal(res.statusCode, 413);
    assertErrorBody(res.json(), 413, /inputFile exceeds the maximum upload size of 50 MB/);
    await assertUnchanged(h, before);
  });
});

describe("authentication", () => {
  const url = "/api/kits/v1/vocal-separations";
  test("no Authorization header → 401 JSON with WWW-Authenticate", async () => {
    const res = await h.app.inject({ method: "GET", url });
    assert.equal(res.statusCode, 401);
    assert.match(String(res.headers["www-authenticate"]), /^Bearer/);
    assert.match(String(res.headers["content-type"]), /application\/json/);
    assertErrorBody(res.json(), 401, /missing Authorization header/);
  });
  test("another scheme → 401", async () => {
    const caller = await h.newCaller();
    const res = await h.app.inject({ method: "GET", url, headers: { authorization: `Basic ${caller.key}` } });
    assert.equal(res.statusCode, 401);
    assertErrorBody(res.json(), 401, /Bearer scheme/);
  });
  test("an unknown key → 401", async () => {
    for (const key of ["mxd_not-a-real-key", "nonsense", ""]) {
      const res = await h.app.inject({ method: "GET", url, headers: { authorization: `Bearer ${key}` } });
      assert.equal(res.statusCode, 401, key);
      assertErrorBody(res.json(), 401, /API key|Bearer/);
    }
  });
  test("a revoked key → 401; the scheme name is case-insensitive", async () => {
    const caller = await h.newCaller();
    const ok = await h.app.inject({ method: "GET", url, headers: { authorization: `bearer ${caller.key}` } });
    assert.equal(ok.statusCode, 200);
    await new ApiKeyRepository(h.prisma).revokeApiKey(caller.apiKeyId);
    const res = await h.app.inject({ method: "GET", url, headers: caller.auth });
    assert.equal(res.statusCode, 401);
    assertErrorBody(res.json(), 401, /invalid or revoked API key/);
  });
  test("an upload without a key is refused before it is read", async () => {
    const before = await footprint(h);
    const res = await upload("stem-splits", {}, await audio("wav"));
    assert.equal(res.statusCode, 401);
    await assertUnchanged(h, before);
  });
  test("health, readiness and the OpenAPI document need no key; unknown routes are 404 JSON", async () => {
    assert.deepEqual((await h.app.inject({ method: "GET", url: "/healthz" })).json(), { status: "ok" });
    const ready = await h.app.inject({ method: "GET", url: "/readyz" });
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json(), { status: "ok", checks: { postgres: "ok", redis: "ok", storage: "ok" } });
    const missing = await h.app.inject({ method: "GET", url: "/api/kits/v1/nothing-here" });
    assert.equal(missing.statusCode, 404);
    assertErrorBody(missing.json(), 404, /not found/);
  });
});

describe("OpenAPI", () => {
  test("/docs/json documents every route from the route schemas; /docs serves the UI", async () => {
    const doc = (await h.app.inject({ method: "GET", url: "/docs/json" })).json();
    assert.equal(doc.openapi, "3.1.0");
    const paths = Object.keys(doc.paths);
    for (const p of [
      "/api/kits/v1/vocal-separations",
      "/api/kits/v1/vocal-separations/{id}",
      "/api/kits/v1/stem-splits",
      "/api/kits/v1/stem-splits/{id}",
      "/api/kits/v1/voice-conversions",
      "/api/kits/v1/voice-conversions/{id}",
      "/api/kits/v1/voice-blender",
      "/api/kits/v1/voice-blender/{id}",
      "/api/kits/v1/voice-models",
      "/api/kits/v1/voice-models/{id}",
      "/healthz",
      "/readyz",
    ]) {
      assert.ok(paths.includes(p), `${p} documented`);
    }
    assert.ok(doc.paths["/api/kits/v1/vocal-separations"].post.requestBody.content["multipart/form-data"]);
    assert.ok(doc.components.schemas.SeparationJob);
    assert.deepEqual(doc.components.securitySchemes.bearerAuth, {
      type: "http",
      scheme: "bearer",
      description: "An API key from `mixdown keys create` (`./mixdown.sh keys create` in a checkout)",
    });
    const ui = await h.app.inject({ method: "GET", url: "/docs/" });
    assert.equal(ui.statusCode, 200);
    assert.match(String(ui.headers["content-type"]), /text\/html/);
  });
});

describe("lists, pagination and caller isolation", () => {
  let owner: Awaited<ReturnType<Harness["newCaller"]>>;
  let ids: number[];
  before(async () => {
    owner = await h.newCaller();
    const repo = new SeparationJobRepository(h.prisma);
    ids = [];
    for (let i = 0; i < 23; i++) {
      const row = await repo.create({
        callerId: owner.callerId,
        kind: "vocal_separation",
        inputKey: `uploads/p/${i}.wav`,
        inputFormat: "wav",
      });
      ids.push(row.id);
    }
    await repo.create({ callerId: owner.callerId, kind: "stem_split", inputKey: "uploads/p/s.wav", inputFormat: "wav" });
  });

  const list = (query: string, auth = owner.auth) =>
    h.app.inject({ method: "GET", url: `/api/kits/v1/vocal-separations${query}`, headers: auth });
  const base = "/api/kits/v1/vocal-separations";

  test("first page with defaults (asc, 10 per page)", async () => {
    const res = await list("");
    assert.equal(res.statusCode, 200);
    const { data, meta } = res.json();
    assert.deepEqual(sortedKeys(res.json()), ["data", "meta"]);
    assert.deepEqual(
      data.map((r: { id: number }) => r.id),
      ids.slice(0, 10),
    );
    data.forEach(assertNewSeparation);
    assert.deepEqual(meta, {
      currentPage: 1,
      firstPage: 1,
      firstPageUrl: `${base}?page=1&perPage=10&order=asc`,
      lastPage: 3,
      lastPageUrl: `${base}?page=3&perPage=10&order=asc`,
      nextPageUrl: `${base}?page=2&perPage=10&order=asc`,
      perPage: 10,
      previousPageUrl: null,
      total: 23,
    });
  });

  test("middle and last pages", async () => {
    const middle = (await list("?page=2")).json();
    assert.deepEqual(
      middle.data.map((r: { id: number }) => r.id),
      ids.slice(10, 20),
    );
    assert.equal(middle.meta.previousPageUrl, `${base}?page=1&perPage=10&order=asc`);
    assert.equal(middle.meta.nextPageUrl, `${base}?page=3&perPage=10&order=asc`);
    const last = (await list("?page=3")).json();
    assert.deepEqual(
      last.data.map((r: { id: number }) => r.id),
      ids.slice(20),
    );
    assert.equal(last.meta.nextPageUrl, null);
    assert.equal(last.meta.previousPageUrl, `${base}?page=2&perPage=10&order=asc`);
  });

  test("a page beyond the last: empty data, correct meta", async () => {
    const res = (await list("?page=7")).json();
    assert.deepEqual(res.data, []);
    assert.equal(res.meta.currentPage, 7);
    assert.equal(res.meta.lastPage, 3);
    assert.equal(res.meta.total, 23);
    assert.equal(res.meta.nextPageUrl, null);
    assert.equal(res.meta.previousPageUrl, `${base}?page=6&perPage=10&order=asc`);
  });

  test("desc order and a custom perPage are kept in every URL", async () => {
    const res = (await list("?order=desc&perPage=7&page=2")).json();
    assert.deepEqual(
      res.data.map((r: { id: number }) => r.id),
      [...ids].reverse().slice(7, 14),
    );
    assert.deepEqual(res.meta, {
      currentPage: 2,
      firstPage: 1,
      firstPageUrl: `${base}?page=1&perPage=7&order=desc`,
      lastPage: 4,
      lastPageUrl: `${base}?page=4&perPage=7&order=desc`,
      nextPageUrl: `${base}?page=3&perPage=7&order=desc`,
      perPage: 7,
      previousPageUrl: `${base}?page=1&perPage=7&order=desc`,
      total: 23,
    });
  });

  test("a caller with no jobs: lastPage 1, total 0; another caller's ids are 404", async () => {
    const stranger = await h.newCaller();
    const res = (await list("", stranger.auth)).json();
    assert.deepEqual(res.data, []);
    assert.equal(res.meta.lastPage, 1);
    assert.equal(res.meta.total, 0);
    assert.equal(res.meta.lastPageUrl, `${base}?page=1&perPage=10&order=asc`);
    const foreign = await h.app.inject({ method: "GET", url: `${base}/${ids[0]}`, headers: stranger.auth });
    assert.equal(foreign.statusCode, 404);
    assertErrorBody(foreign.json(), 404, /vocal separation \d+ not found/);
  });

  test("stem splits list only stem splits", async () => {
    const res = await h.app.inject({ method: "GET", url: "/api/kits/v1/stem-splits", headers: owner.auth });
    assert.equal(res.json().meta.total, 1);
  });

  test("bad list parameters → 422 naming them; malformed ids → 404", async () => {
    for (const [query, field] of [
      ["?order=sideways", /order must be one of asc, desc/],
      ["?perPage=0", /perPage must be >= 1/],
      ["?perPage=101", /perPage must be <= 100/],
      ["?page=0", /page must be >= 1/],
      ["?page=abc", /page must be integer/],
    ] as const) {
      const res = await list(query);
      assert.equal(res.statusCode, 422, query);
      assertErrorBody(res.json(), 422, field);
    }
    for (const id of ["abc", "0", "-1", "99999999999"]) {
      const res = await h.app.inject({ method: "GET", url: `${base}/${id}`, headers: owner.auth });
      assert.equal(res.statusCode, 404, id);
      assertErrorBody(res.json(), 404, /not found/);
    }
  });
});
