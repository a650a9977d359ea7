import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { bullJobId } from "@mixdown/queue";
import { assertUnchanged, footprint, multipart, sortedKeys, startHarness, TIMESTAMP, type Harness } from "./helpers.ts";

// A small limit, so that the tests can cross it.
const MAX_CHARS = 200;

let h: Harness;
let me: Awaited<ReturnType<Harness["newCaller"]>>;
let stranger: Awaited<ReturnType<Harness["newCaller"]>>;
let publicModel: number;
let myModel: number;
let strangersModel: number;
let pendingModel: number;

before(async () => {
  h = await startHarness("s3", { MAX_TTS_TEXT_CHARS: String(MAX_CHARS) });
  me = await h.newCaller("me");
  stranger = await h.newCaller("stranger");
  publicModel = (await h.createModel({ title: "Public Alto" })).id;
  myModel = (await h.createModel({ title: "My Tenor", ownerId: me.callerId })).id;
  strangersModel = (await h.createModel({ title: "Their Bass", ownerId: stranger.callerId })).id;
  pendingModel = (await h.createModel({ title: "Unfinished", ownerId: me.callerId, state: "pending" })).id;
});
after(async () => {
  await h?.stop();
});

const URL = "/api/kits/v1/tts";
type Caller = typeof me;

function form(fields: Record<string, string | number>, caller: Caller = me, headers: Record<string, string> = {}) {
  const body = multipart(fields, []);
  return h.app.inject({
    method: "POST",
    url: URL,
    headers: { ...body.headers, ...caller.auth, ...headers },
    payload: body.payload,
  });
}

function expectError(res: { statusCode: number; json(): any; body: string }, status: number, message: RegExp): void {
  assert.equal(res.statusCode, status, res.body);
  const body = res.json();
  assert.deepEqual(sortedKeys(body), ["error", "message", "statusCode"]);
  assert.equal(body.statusCode, status);
  assert.match(body.message, message);
}

const RECORD_KEYS = [
  "createdAt",
  "errorMessage",
  "id",
  "inputTtsText",
  "jobEndTime",
  "jobStartTime",
  "language",
  "lossyOutputFileUrl",
  "model",
  "outputFileUrl",
  "outputsExpireAt",
  "outputsExpiredAt",
  "progress",
  "status",
  "synthesizer",
  "type",
  "voiceModelId",
];

describe("text to speech", () => {
  test("creates a job from form fields: 201, the inference record with type tts; row and queue entry; fetch and list; 404 for another caller", async () => {
    const res = await form({ voiceModelId: myModel, inputTtsText: "Hello there. This is my voice speaking." });
    assert.equal(res.statusCode, 201, res.body);
    const record = res.json();
    assert.deepEqual(sortedKeys(record), RECORD_KEYS);
    assert.equal(record.type, "tts");
    assert.equal(record.status, "running");
    assert.equal(record.voiceModelId, myModel);
    assert.equal(record.inputTtsText, "Hello there. This is my voice speaking.");
    assert.equal(record.synthesizer, null);
    assert.equal(record.language, null, "no language asked for: the default, English");
    assert.match(record.createdAt, TIMESTAMP);
    assert.match(record.jobStartTime, TIMESTAMP);
    assert.equal(record.jobEndTime, null);
    assert.equal(record.outputFileUrl, null);
    assert.equal(record.lossyOutputFileUrl, null);
    assert.equal(record.model.id, myModel);
    assert.equal(record.model.title, "My Tenor");

    const row = await h.prisma.ttsJob.findUniqueOrThrow({ where: { id: record.id } });
    assert.equal(row.inputText, "Hello there. This is my voice speaking.");
    assert.equal(row.apiKeyId, me.apiKeyId);
    assert.notEqual(row.enqueuedAt, null);
    const job = await h.app.ctx.queues.queue("tts").getJob(bullJobId("tts", record.id));
    assert.deepEqual(job?.data, { jobId: record.id });
    assert.equal(job?.name, "tts");

    const fetched = await h.app.inject({ method: "GET", url: `${URL}/${record.id}`, headers: me.auth });
    assert.equal(fetched.statusCode, 200);
    assert.deepEqual(fetched.json(), record);
    const list = (await h.app.inject({ method: "GET", url: `${URL}?perPage=100`, headers: me.auth })).json();
    assert.deepEqual(list.data.at(-1), record);
    expectError(
      await h.app.inject({ method: "GET", url: `${URL}/${record.id}`, headers: stranger.auth }),
      404,
      /tts job \d+ not found/,
    );
    expectError(await h.app.inject({ method: "GET", url: `${URL}/987654`, headers: me.auth }), 404, /tts job 987654 not found/);
    const theirs = (await h.app.inject({ method: "GET", url: URL, headers: stranger.auth })).json();
    assert.ok(theirs.data.every((r: { id: number }) => r.id !== record.id));
  });

  test("the same fields as a urlencoded form (Python requests' data=) or a JSON object, voiceModelId a number; a public model", async () => {
    const urlencoded = await h.app.inject({
      method: "POST",
      url: URL,
      headers: { ...me.auth, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ voiceModelId: String(publicModel), inputTtsText: "Ça va? Très bien & merci!" }).toString(),
    });
    assert.equal(urlencoded.statusCode, 201, urlencoded.body);
    assert.equal(urlencoded.json().voiceModelId, publicModel);
    assert.equal(urlencoded.json().inputTtsText, "Ça va? Très bien & merci!");

    const json = await h.app.inject({
      method: "POST",
      url: URL,
      headers: me.auth,
      payload: { voiceModelId: publicModel, inputTtsText: "  Numbers like 42 are spoken too.  " },
    });
    assert.equal(json.statusCode, 201, json.body);
    assert.equal(json.json().inputTtsText, "Numbers like 42 are spoken too.", "surrounding whitespace is trimmed");
  });

  test("language: a tag the synthesizers here speak, in any case, is kept lowercase on the row and the record; empty is the default", async () => {
    for (const [language, stored] of [
      ["de", "de"],
      ["PT-BR", "pt-br"],
      ["en", "en"],
      ["", null],
    ] as const) {
      const res = await form({ voiceModelId: myModel, inputTtsText: "Guten Tag.", language });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.json().language, stored, language);
      assert.equal((await h.prisma.ttsJob.findUniqueOrThrow({ where: { id: res.json().id } })).language, stored);
    }
    const json = await h.app.inject({
      method: "POST",
      url: URL,
      headers: me.auth,
      payload: { voiceModelId: myModel, inputTtsText: "Bonjour.", language: "fr" },
    });
    assert.equal(json.json().language, "fr");
  });

  test("inputTtsText sent as a file part (Python requests' files=) is read as the text; the limit counts characters, not UTF-16 units", async () => {
    const long = `${"word ".repeat(39)}end.`; // 199 characters
    const emoji = `${"🎵".repeat(MAX_CHARS - 1)}a`; // 200 characters (code points): at the limit, 399 UTF-16 units
    for (const text of [long, emoji]) {
      const boundary = "3699350bed95d6816f6c651c178295b1";
      const payload = Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="voiceModelId"; filename="voiceModelId"\r\n\r\n${myModel}\r\n`,
        ),
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="inputTtsText"; filename="inputTtsText"\r\n\r\n`),
        Buffer.from(text),
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
      const res = await h.app.inject({
        method: "POST",
        url: URL,
        headers: { ...me.auth, "content-type": `multipart/form-data; boundary=${boundary}` },
        payload,
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.json().inputTtsText, text.trim());
    }
    assert.ok(emoji.length > MAX_CHARS, "the UTF-16 length is past the limit, the character count is not");
  });

  const badInputs: Array<[string, Record<string, string | number>, RegExp]> = [
    ["no inputTtsText", { voiceModelId: 1 }, /inputTtsText is required/],
    ["empty inputTtsText", { inputTtsText: "" }, /inputTtsText is empty/],
    ["whitespace-only inputTtsText", { inputTtsText: " \n\t  \r\n " }, /inputTtsText is empty/],
    ["punctuation only", { inputTtsText: "?! ... --" }, /inputTtsText has nothing to speak: it has no letters or digits/],
    [
      `${MAX_CHARS + 1} characters`,
      { inputTtsText: "a".repeat(MAX_CHARS + 1) },
      new RegExp(
        `inputTtsText is ${MAX_CHARS + 1} characters long; the limit is ${MAX_CHARS} characters \\(MAX_TTS_TEXT_CHARS\\)`,
      ),
    ],
    [
      "a language no synthesizer here speaks",
      { inputTtsText: "Hello.", language: "tlh" },
      /language "tlh" is not one this server speaks; available: .*\bde\b.*\ben-gb\b.*\ben-us\b.*\bpt-br\b/,
    ],
    ["no voiceModelId", { inputTtsText: "Hello." }, /voiceModelId is required/],
    ["a malformed voiceModelId", { inputTtsText: "Hello.", voiceModelId: "3x" }, /voiceModelId must be a positive integer/],
    [
      "an unknown model",
      { inputTtsText: "Hello.", voiceModelId: 987654 },
      /voice model 987654 does not exist or is not available/,
    ],
  ];
  for (const [name, fields, message] of badInputs) {
    test(`${name} → 422 naming it; no row, no object, no queue entry`, async () => {
      const before = await footprint(h);
      const withModel = "voiceModelId" in fields || name === "no voiceModelId" ? fields : { voiceModelId: myModel, ...fields };
      expectError(await form(withModel), 422, message);
      await assertUnchanged(h, before);
    });
  }

  test("another caller's private model or a pending model → 422 naming voiceModelId; JSON of the wrong types → 422; not a form or object → 400; nothing stored", async () => {
    const before = await footprint(h);
    expectError(
      await form({ voiceModelId: strangersModel, inputTtsText: "Hi." }),
      422,
      /voiceModelId: voice model \d+ does not exist/,
    );
    expectError(
      await form({ voiceModelId: pendingModel, inputTtsText: "Hi." }),
      422,
      /voiceModelId: voice model \d+ is not usable yet \(state pending\)/,
    );
    const json = (payload: unknown) =>
      h.app.inject({
        method: "POST",
        url: URL,
        headers: { ...me.auth, "content-type": "application/json" },
        payload: JSON.stringify(payload),
      });
    expectError(await json({ voiceModelId: myModel, inputTtsText: ["a", "b"] }), 422, /inputTtsText must be a string/);
    expectError(await json({ voiceModelId: true, inputTtsText: "Hi." }), 422, /voiceModelId must be a string or a number/);
    expectError(await json([1, 2]), 400, /request body must be a form .* or a JSON object/);
    expectError(await json({ voiceModelId: myModel, inputTtsText: "a".repeat(MAX_CHARS + 1) }), 422, /MAX_TTS_TEXT_CHARS/);
    const text = await h.app.inject({
      method: "POST",
      url: URL,
      headers: { ...me.auth, "content-type": "text/plain" },
      payload: "Hello",
    });
    expectError(text, 400, /request body must be a form/);
    expectError(
      await h.app.inject({ method: "POST", url: URL, payload: { voiceModelId: myModel, inputTtsText: "Hi." } }),
      401,
      /Authorization/,
    );
    await assertUnchanged(h, before);
  });

  test("list: the caller's jobs only, oldest first by default, paged with the interface's meta; 401 without a key; 422 past perPage's limit", async () => {
    const caller = await h.newCaller();
    const mine = [];
    for (const text of ["One.", "Two.", "Three."])
      mine.push((await form({ voiceModelId: publicModel, inputTtsText: text }, caller)).json());
    const first = await h.app.inject({ method: "GET", url: `${URL}?perPage=2&order=desc`, headers: caller.auth });
    assert.equal(first.statusCode, 200, first.body);
    assert.deepEqual(first.json().data, [mine[2], mine[1]]);
    assert.deepEqual(first.json().meta, {
      currentPage: 1,
      firstPage: 1,
      firstPageUrl: `${URL}?page=1&perPage=2&order=desc`,
      lastPage: 2,
      lastPageUrl: `${URL}?page=2&perPage=2&order=desc`,
      nextPageUrl: `${URL}?page=2&perPage=2&order=desc`,
      perPage: 2,
      previousPageUrl: null,
      total: 3,
    });
    const second = (
      await h.app.inject({ method: "GET", url: `${URL}?page=2&perPage=2&order=desc`, headers: caller.auth })
    ).json();
    assert.deepEqual(second.data, [mine[0]]);
    assert.equal(second.meta.nextPageUrl, null);
    assert.equal(second.meta.previousPageUrl, `${URL}?page=1&perPage=2&order=desc`);
    const asc = (await h.app.inject({ method: "GET", url: URL, headers: caller.auth })).json();
    assert.deepEqual(
      asc.data.map((r: { id: number }) => r.id),
      mine.map((r) => r.id),
    );
    assert.equal(asc.meta.perPage, 10);
    expectError(await h.app.inject({ method: "GET", url: URL }), 401, /Authorization/);
    expectError(await h.app.inject({ method: "GET", url: `${URL}/1` }), 401, /Authorization/);
    expectError(await h.app.inject({ method: "GET", url: `${URL}?perPage=100000`, headers: caller.auth }), 422, /perPage/);
  });

  test("cancel of a queued job: 200 cancelled, queue entry gone; again → 409 naming the status; someone else's → 404", async () => {
    const created = (await form({ voiceModelId: myModel, inputTtsText: "Cancel me." })).json();
    expectError(
      await h.app.inject({ method: "POST", url: `${URL}/${created.id}/cancel`, headers: stranger.auth }),
      404,
      /not found/,
    );
    const res = await h.app.inject({ method: "POST", url: `${URL}/${created.id}/cancel`, headers: me.auth });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, "cancelled");
    assert.match(res.json().jobEndTime, TIMESTAMP);
    expectError(
      await h.app.inject({ method: "POST", url: `${URL}/${created.id}/cancel`, headers: me.auth }),
      409,
      /has already ended \(status cancelled\)/,
    );
  });

  test("a webhookUrl is kept on the row; a bad one is a 422 naming it", async () => {
    const ok = await form({ voiceModelId: myModel, inputTtsText: "Tell me.", webhookUrl: "https://hooks.example/tts" });
    assert.equal(ok.statusCode, 201, ok.body);
    const row = await h.prisma.ttsJob.findUniqueOrThrow({ where: { id: ok.json().id } });
    assert.equal(row.webhookUrl, "https://hooks.example/tts");
    const before = await footprint(h);
    expectError(await form({ voiceModelId: myModel, inputTtsText: "Tell me.", webhookUrl: "ftp://x" }), 422, /webhookUrl/);
    await assertUnchanged(h, before);
  });

  test("metrics: tts creates are counted, and tts rows and queue entries are reported by kind", async () => {
    const created = (await h.app.inject({ method: "GET", url: "/metrics" })).body;
    const sample = (text: string, pattern: RegExp) => Number(text.match(pattern)?.[1]);
    const count = await h.prisma.ttsJob.count({ where: { status: "running" } });
    assert.ok(sample(created, /^mixdown_jobs_created_total\{kind="tts"\} (\d+)$/m) >= 1);
    assert.equal(sample(created, /^mixdown_jobs\{kind="tts",status="running"\} (\d+)$/m), count);
    assert.equal(sample(created, /^mixdown_queue_jobs\{queue="tts",state="waiting"\} (\d+)$/m), count);
  });

  test("the OpenAPI document describes the routes and the record", async () => {
    const doc = (await h.app.inject({ method: "GET", url: "/docs/json" })).json();
    assert.ok(doc.paths["/api/kits/v1/tts"].post);
    assert.ok(doc.paths["/api/kits/v1/tts"].get);
    assert.ok(doc.paths["/api/kits/v1/tts/{id}"].get);
    assert.ok(doc.paths["/api/kits/v1/tts/{id}/cancel"].post);
    assert.deepEqual(Object.keys(doc.paths["/api/kits/v1/tts"].post.requestBody.content).sort(), [
      "application/json",
      "application/x-www-form-urlencoded",
      "multipart/form-data",
    ]);
    assert.deepEqual(doc.components.schemas.TtsJob.properties.type.enum, ["tts"]);
  });
});
