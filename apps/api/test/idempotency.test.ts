import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { IdempotencyKeyRepository } from "@mixdown/db";
import { audio, footprint, multipart, startHarness, type Harness } from "./helpers.ts";

let h: Harness;
let aria: Buffer;
before(async () => {
  h = await startHarness("s3");
  aria = await readFile(new URL("../../../models/voices/native-aria.onnx", import.meta.url));
});
after(async () => {
  await h?.stop();
});

type Auth = { authorization: string };
interface Route {
  path: string;
  status: number;
  /** The request made with `variant` 0, and a different one with variant 1. */
  send(
    auth: Auth,
    key: string | undefined,
    variant?: number,
  ): Promise<{ statusCode: number; body: string; headers: Record<string, unknown>; json(): any }>;
}

const post = (url: string, auth: Auth, key: string | undefined, form: { payload: Buffer; headers: Record<string, string> }) =>
  h.app.inject({
    method: "POST",
    url,
    headers: { ...form.headers, ...auth, ...(key === undefined ? {} : { "idempotency-key": key }) },
    payload: form.payload,
  });

const ROUTES: Route[] = [
  ...["vocal-separations", "stem-splits"].map((path) => ({
    path,
    status: 200,
    send: async (auth: Auth, key: string | undefined, variant = 0) =>
      post(
        `/api/kits/v1/${path}`,
        auth,
        key,
        multipart({}, [{ name: "inputFile", filename: "song.wav", content: await audio("wav", variant ? 0.6 : 0.5) }]),
      ),
  })),
  {
    path: "voice-conversions",
    status: 201,
    send: async (auth, key, variant = 0) => {
      const model = await modelFor();
      return post(
        "/api/kits/v1/voice-conversions",
        auth,
        key,
        multipart({ voiceModelId: model, pitchShift: variant ? 3 : 0 }, [
          { name: "soundFile", filename: "voice.wav", content: await audio("wav") },
        ]),
      );
    },
  },
  {
    path: "tts",
    status: 201,
    send: async (auth, key, variant = 0) =>
      post(
        "/api/kits/v1/tts",
        auth,
        key,
        multipart({ voiceModelId: await modelFor(), inputTtsText: variant ? "Something else." : "Hello there." }, []),
      ),
  },
  {
    path: "voice-models",
    status: 201,
    send: async (auth, key, variant = 0) =>
      post(
        "/api/kits/v1/voice-models",
        auth,
        key,
        multipart({ metadata: JSON.stringify({ title: variant ? "Other" : "Aria copy" }) }, [
          { name: "modelFile", filename: "aria.onnx", content: aria },
        ]),
      ),
  },
  {
    path: "voice-blender",
    status: 201,
    send: async (auth, key, variant = 0) => {
      const [a, b] = await blendModels();
      return h.app.inject({
        method: "POST",
        url: "/api/kits/v1/voice-blender",
        headers: { ...auth, ...(key === undefined ? {} : { "idempotency-key": key }) },
        payload: { modelId1: a, modelId2: b, alpha: variant ? 0.3 : 0.5 },
      });
    },
  },
];

let publicModel: number | undefined;
async function modelFor(): Promise<number> {
  publicModel ??= (await h.createModel({ title: "Public voice", fileKey: "models:voices/native-aria.onnx" })).id;
  return publicModel;
}
let blendPair: [number, number] | undefined;
async function blendModels(): Promise<[number, number]> {
  blendPair ??= [(await h.createModel({ title: "A" })).id, (await h.createModel({ title: "B" })).id];
  return blendPair;
}

describe("Idempotency-Key on creates", () => {
  for (const route of ROUTES) {
    test(`POST /${route.path}: a replay returns the first record and stores nothing; a different request with the key is a 409 naming it`, async () => {
      const caller = await h.newCaller();
      const key = `create-${route.path}-${Date.now()}`;
      const first = await route.send(caller.auth, key);
      assert.equal(first.statusCode, route.status, first.body);
      assert.equal(first.headers["idempotent-replayed"], undefined);
      const afterFirst = await footprint(h);

      const replay = await route.send(caller.auth, key);
      assert.equal(replay.statusCode, route.status, replay.body);
      assert.equal(replay.headers["idempotent-replayed"], "true");
      assert.equal(replay.json().id, first.json().id);
      assert.deepEqual(await footprint(h), afterFirst, "the replay stored a row, object, queue entry or temp file");

      const other = await route.send(caller.auth, key, 1);
      assert.equal(other.statusCode, 409, other.body);
      assert.deepEqual(Object.keys(other.json()).sort(), ["error", "message", "statusCode"]);
      assert.match(
        other.json().message,
        new RegExp(`Idempotency-Key "${key}" was already used with a different request \\(POST /api/kits/v1/${route.path}\\)`),
      );
      assert.deepEqual(await footprint(h), afterFirst, "the 409 stored something");

      // Another caller's key space is its own.
      const stranger = await h.newCaller();
      const theirs = await route.send(stranger.auth, key);
      assert.equal(theirs.statusCode, route.status, theirs.body);
      assert.notEqual(theirs.json().id, first.json().id);
    });
  }

  test("a replay answers with the record's current state, not a copy of the first response", async () => {
    const caller = await h.newCaller();
    const created = (await ROUTES[0]!.send(caller.auth, "state-1")).json();
    assert.equal(created.status, "running");
    await h.prisma.separationJob.update({
      where: { id: created.id },
      data: { status: "error", progress: 100, errorMessage: "bad input", jobEndTime: new Date() },
    });
    const replay = await ROUTES[0]!.send(caller.auth, "state-1");
    assert.equal(replay.json().id, created.id);
    assert.equal(replay.json().status, "error");
    assert.equal(replay.json().errorMessage, "bad input");
  });

  test("concurrent requests with one key create exactly one row; the others replay it or get 409 while it is in flight", async () => {
    const caller = await h.newCaller();
    const before = await h.prisma.separationJob.count({ where: { callerId: caller.callerId } });
    const answers = await Promise.all(Array.from({ length: 6 }, () => ROUTES[0]!.send(caller.auth, "race")));
    assert.equal(await h.prisma.separationJob.count({ where: { callerId: caller.callerId } }), before + 1);
    const ok = answers.filter((a) => a.statusCode === 200);
    const busy = answers.filter((a) => a.statusCode === 409);
    assert.equal(ok.length + busy.length, 6, answers.map((a) => a.body).join("\n"));
    assert.ok(ok.length >= 1);
    assert.equal(new Set(ok.map((a) => a.json().id)).size, 1, "every success names the same job");
    for (const b of busy) {
      assert.match(b.json().message, /Idempotency-Key "race" is still being processed/);
      assert.equal(b.headers["retry-after"], "1");
    }
    assert.equal(await h.prisma.idempotencyKey.count({ where: { callerId: caller.callerId, key: "race" } }), 1);
  });

  test("the same key on another create route is a 409", async () => {
    const caller = await h.newCaller();
    assert.equal((await ROUTES[0]!.send(caller.auth, "shared")).statusCode, 200);
    const before = await footprint(h);
    const res = await ROUTES[1]!.send(caller.auth, "shared");
    assert.equal(res.statusCode, 409);
    assert.match(res.json().message, /already used with a different request \(POST \/api\/kits\/v1\/vocal-separations\)/);
    assert.deepEqual(await footprint(h), before);
  });

  test("a blend body with its keys in another order is the same request", async () => {
    const caller = await h.newCaller();
    const [a, b] = await blendModels();
    const send = (payload: object) =>
      h.app.inject({
        method: "POST",
        url: "/api/kits/v1/voice-blender",
        headers: { ...caller.auth, "idempotency-key": "order" },
        payload,
      });
    const first = await send({ modelId1: a, modelId2: b, alpha: 0.5 });
    const again = await send({ alpha: 0.5, modelId2: b, modelId1: a });
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.json().id, first.json().id);
  });

  test("an empty key or one longer than 255 characters is a 400 and nothing is stored", async () => {
    const caller = await h.newCaller();
    const before = await footprint(h);
    for (const [key, message] of [
      ["", /Idempotency-Key must not be empty/],
      ["k".repeat(256), /Idempotency-Key must be at most 255 characters \(got 256\)/],
    ] as const) {
      for (const route of [ROUTES[0]!, ROUTES[4]!]) {
        const res = await route.send(caller.auth, key);
        assert.equal(res.statusCode, 400, res.body);
        assert.deepEqual(Object.keys(res.json()).sort(), ["error", "message", "statusCode"]);
        assert.match(res.json().message, message);
      }
    }
    assert.deepEqual(await footprint(h), before);
    assert.equal(await h.prisma.idempotencyKey.count({ where: { callerId: caller.callerId } }), 0);
    assert.equal((await ROUTES[0]!.send(caller.auth, "k".repeat(255))).statusCode, 200);
  });

  test("a failed create does not use up its key: the corrected request succeeds under it", async () => {
    const caller = await h.newCaller();
    const bad = await post(
      "/api/kits/v1/vocal-separations",
      caller.auth,
      "retry-me",
      multipart({}, [
        { name: "inputFile", filename: "notes.wav", content: Buffer.from("not audio at all, just text ".repeat(40)) },
      ]),
    );
    assert.ok(bad.statusCode >= 400 && bad.statusCode < 500, bad.body);
    assert.equal(await h.prisma.idempotencyKey.count({ where: { callerId: caller.callerId } }), 0);
    const good = await ROUTES[0]!.send(caller.auth, "retry-me");
    assert.equal(good.statusCode, 200, good.body);
    assert.equal(good.headers["idempotent-replayed"], undefined);
  });

  test("a key older than 24 hours is ignored (a new request under it creates a new job) and pruned", async () => {
    const caller = await h.newCaller();
    const first = (await ROUTES[0]!.send(caller.auth, "old")).json();
    const old = new Date(Date.now() - 25 * 3600_000);
    await h.prisma.idempotencyKey.updateMany({ where: { callerId: caller.callerId, key: "old" }, data: { createdAt: old } });
    const next = await ROUTES[0]!.send(caller.auth, "old", 1);
    assert.equal(next.statusCode, 200, next.body);
    assert.notEqual(next.json().id, first.id);

    await h.prisma.idempotencyKey.updateMany({ where: { callerId: caller.callerId, key: "old" }, data: { createdAt: old } });
    const pruned = await new IdempotencyKeyRepository(h.prisma).pruneOlderThan(new Date(Date.now() - 24 * 3600_000));
    assert.ok(pruned >= 1);
    assert.equal(await h.prisma.idempotencyKey.count({ where: { callerId: caller.callerId } }), 0);
  });

  test("the OpenAPI document names the header and the 409 on every create", async () => {
    const doc = (await h.app.inject({ method: "GET", url: "/docs/json" })).json();
    for (const route of ROUTES) {
      const op = doc.paths[`/api/kits/v1/${route.path}`].post;
      assert.ok(
        op.parameters.some((p: { in: string; name: string }) => p.in === "header" && p.name === "idempotency-key"),
        route.path,
      );
      assert.ok(op.responses["409"], route.path);
    }
  });
});
