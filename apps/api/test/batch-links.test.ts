import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { bullJobId } from "@mixdown/jobs";
import { assertUnchanged, audio, footprint, startHarness, type Harness } from "./helpers.ts";

let h: Harness;
type Caller = Awaited<ReturnType<Harness["newCaller"]>>;

const BASE = "/api/kits/v1";

before(async () => {
  h = await startHarness("s3", {
    MAX_BATCH_FILES: "4",
    MAX_CALLER_JOBS_IN_FLIGHT: "20",
    WEBHOOK_DENIED_NETWORKS: "private",
  });
});
after(() => h?.stop());

/** A multipart body as a browser's FormData sends it: repeated fields kept, in order. */
async function formBody(form: FormData): Promise<{ payload: Buffer; headers: Record<string, string> }> {
  const request = new Request("http://localhost/", { method: "POST", body: form });
  return { payload: Buffer.from(await request.arrayBuffer()), headers: { "content-type": request.headers.get("content-type")! } };
}

async function postForm(who: Caller, form: FormData) {
  const { payload, headers } = await formBody(form);
  return h.app.inject({ method: "POST", url: `${BASE}/batches`, headers: { ...headers, ...who.auth }, payload });
}

function linksForm(kind: string, links: string[], extra: Record<string, string> = {}): FormData {
  const form = new FormData();
  form.append("kind", kind);
  for (const [name, value] of Object.entries(extra)) form.append(name, value);
  for (const link of links) form.append("urls", link);
  return form;
}

const REFUSED: Array<[string, RegExp]> = [
  ["ftp://example.com/song.mp3", /^urls must use http or https, not ftp$/],
  ["https://me:secret@example.com/song.mp3", /^urls must not contain credentials/],
  [
    "http://10.0.0.5/song.wav",
    /^urls points to 10\.0\.0\.5, in a network this service does not download from \(WEBHOOK_DENIED_NETWORKS\)$/,
  ],
  [`https://example.com/${"s".repeat(2048)}.wav`, /^urls must be at most 2048 characters$/],
];

describe("POST /batches with links", () => {
  test("makes a job per link that passes modelUrl's rules, whose record names it, and lists the refused links with the reason", async () => {
    const me = await h.newCaller();
    const links = [
      "https://media.example.com/songs/First%20Song.wav",
      REFUSED[0]![0],
      "https://media.example.com/take.mp3?x=1",
      REFUSED[2]![0],
    ];
    const res = await postForm(me, linksForm("stem-split", links));
    assert.equal(res.statusCode, 200, res.body);
    const batch = res.json();
    assert.equal(batch.kind, "stem-split");
    assert.deepEqual(
      batch.jobs.map((j: { fileName: string; status: string }) => [j.fileName, j.status]),
      [
        ["First Song.wav", "running"],
        ["take.mp3", "running"],
      ],
    );
    assert.deepEqual(
      batch.rejected.map((r: { fileName: string }) => r.fileName),
      [REFUSED[0]![0], REFUSED[2]![0]],
    );
    assert.match(batch.rejected[0].reason, REFUSED[0]![1]);
    assert.match(batch.rejected[1].reason, REFUSED[2]![1]);

    const rows = await h.prisma.separationJob.findMany({ where: { batchId: batch.id }, orderBy: { id: "asc" } });
    assert.deepEqual(
      rows.map((r) => [r.kind, r.inputUrl, r.audioSeconds]),
      [
        ["stem_split", links[0], null],
        ["stem_split", links[2], null],
      ],
    );
    // The job's usual upload key, empty until the worker has downloaded the link into it.
    for (const row of rows) {
      assert.match(row.inputKey, /^uploads\/stem-split\/[0-9a-f-]{36}\.(wav|mp3)$/);
      assert.equal(await h.app.ctx.storage.exists(row.inputKey), false);
      assert.equal(await h.app.ctx.queues.queue("separation").getJobState(bullJobId("separation", row.id)), "prioritized");
    }
    const job = await h.app.inject({ method: "GET", url: `${BASE}/stem-splits/${rows[0]!.id}`, headers: me.auth });
    assert.equal(job.statusCode, 200);
    assert.equal(job.json().inputUrl, links[0]);
  });

  test("takes the links beside files (files first), and a job made from an upload has no inputUrl", async () => {
    const me = await h.newCaller();
    const form = linksForm("vocal-separation", ["https://media.example.com/b.flac"]);
    form.append("files", new Blob([new Uint8Array(await audio("wav"))]), "a.wav");
    const res = await postForm(me, form);
    assert.equal(res.statusCode, 200, res.body);
    const batch = res.json();
    assert.deepEqual(
      batch.jobs.map((j: { fileName: string }) => j.fileName),
      ["a.wav", "b.flac"],
    );
    const upload = await h.app.inject({ method: "GET", url: `${BASE}/vocal-separations/${batch.jobs[0].id}`, headers: me.auth });
    assert.equal("inputUrl" in upload.json(), false, "an upload's record is the one Kits clients know");
  });

  test("takes a JSON object and a urlencoded form of links too, a field holding several one per line", async () => {
    const me = await h.newCaller();
    const json = await h.app.inject({
      method: "POST",
      url: `${BASE}/batches`,
      headers: { ...me.auth, "content-type": "application/json" },
      payload: {
        kind: "vocal-separation",
        model: "vocals",
        urls: ["https://a.example.com/1.wav", "https://a.example.com/2.wav"],
      },
    });
    assert.equal(json.statusCode, 200, json.body);
    assert.deepEqual(
      json.json().jobs.map((j: { fileName: string }) => j.fileName),
      ["1.wav", "2.wav"],
    );
    const encoded = await h.app.inject({
      method: "POST",
      url: `${BASE}/batches`,
      headers: { ...me.auth, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams([
        ["kind", "stem-split"],
        ["urls", "https://a.example.com/3.wav\nhttps://a.example.com/4.wav\n"],
        ["urls", "https://a.example.com/5.wav"],
      ]).toString(),
    });
    assert.equal(encoded.statusCode, 200, encoded.body);
    assert.deepEqual(
      encoded.json().jobs.map((j: { fileName: string }) => j.fileName),
      ["3.wav", "4.wav", "5.wav"],
    );
    const wrong = await h.app.inject({
      method: "POST",
      url: `${BASE}/batches`,
      headers: { ...me.auth, "content-type": "application/json" },
      payload: { kind: "vocal-separation", urls: [1, 2] },
    });
    assert.equal(wrong.statusCode, 422);
    assert.equal(wrong.json().message, "urls must be an array of links (strings)");
  });

  test("a batch in which every link is refused is a 422 naming each, and leaves nothing behind", async () => {
    const me = await h.newCaller();
    const before = await footprint(h);
    const res = await postForm(
      me,
      linksForm(
        "vocal-separation",
        REFUSED.map(([link]) => link),
      ),
    );
    assert.equal(res.statusCode, 422, res.body);
    const message: string = res.json().message;
    assert.match(
      message,
      /^no file or link of the batch is audio a vocal separation takes: ftp:\/\/example\.com\/song\.mp3: urls must use http or https/,
    );
    for (const [, reason] of REFUSED) assert.match(message, new RegExp(reason.source.replace(/^\^/, "").replace(/\$$/, "")));
    await assertUnchanged(h, before);
  });

  test("more files and links than MAX_BATCH_FILES together is a 413 naming the setting, and leaves nothing behind", async () => {
    const me = await h.newCaller();
    const before = await footprint(h);
    const form = linksForm("vocal-separation", [
      "https://a.example.com/1.wav",
      "https://a.example.com/2.wav",
      "https://a.example.com/3.wav",
    ]);
    form.append("files", new Blob([new Uint8Array(await audio("wav"))]), "a.wav");
    form.append("files", new Blob([new Uint8Array(await audio("wav"))]), "b.wav");
    const res = await postForm(me, form);
    assert.equal(res.statusCode, 413, res.body);
    assert.equal(res.json().message, "a batch takes at most 4 files and links together (MAX_BATCH_FILES)");
    await assertUnchanged(h, before);
  });
});
