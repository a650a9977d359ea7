import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { testFilesDir } from "@mixdown/devstack";
import { bullJobId } from "@mixdown/queue";
import { assertUnchanged, audio, footprint, multipart, startHarness, type FilePart, type Harness } from "./helpers.ts";

let h: Harness;
let me: Awaited<ReturnType<Harness["newCaller"]>>;
let models: string;

before(async () => {
  // The VOICE_* files in a folder of this test's own, empty at first (a developer's models/ may hold them).
  models = await testFilesDir("assets-");
  h = await startHarness("s3", {
    WEBHOOK_DENIED_NETWORKS: "private",
    MODELS_DIR: models,
    VOICE_CONTENTVEC_MODEL: "voices/vec-768-layer-12.onnx",
    VOICE_CONTENTVEC_V1_MODEL: "voices/vec-256-layer-9.onnx",
    VOICE_RMVPE_MODEL: "voices/rmvpe.onnx",
  });
  me = await h.newCaller("me");
});
after(async () => {
  await h?.stop();
});

const post = (fields: Record<string, string>, files: FilePart[] = []) => {
  const { payload, headers } = multipart({ metadata: JSON.stringify({ title: "Linked" }), ...fields }, files);
  return h.app.inject({ method: "POST", url: "/api/kits/v1/voice-models", payload, headers: { ...headers, ...me.auth } });
};
const get = (url: string) => h.app.inject({ method: "GET", url: `/api/kits/v1/${url}`, headers: me.auth });

describe("POST /voice-models with a modelUrl", () => {
  test("answers the model pending, with the link as its source (a Hugging Face /blob/ link as /resolve/), and queues its build", async () => {
    const res = await post({
      modelUrl: "https://huggingface.co/someone/voices/blob/main/Singer.zip",
      indexUrl: "https://example.com/Singer.index",
    });
    assert.equal(res.statusCode, 201, res.body);
    const model = res.json();
    assert.deepEqual([model.state, model.usable, model.architecture, model.sampleRate], ["pending", false, "rvc", 40000]);
    const row = await h.prisma.voiceModel.findUniqueOrThrow({ where: { id: model.id } });
    assert.equal(row.sourceUrl, "https://huggingface.co/someone/voices/resolve/main/Singer.zip");
    assert.deepEqual(row.metadata, { source: "url", indexUrl: "https://example.com/Singer.index" });
    assert.equal(row.referenceKey, null);
    assert.notEqual(row.buildEnqueuedAt, null);
    assert.equal(
      await h.app.ctx.queues.queue("voice-model-build").getJobState(bullJobId("voice-model-build", model.id)),
      "waiting",
    );
    assert.deepEqual(await h.app.ctx.storage.list(`voice-models/${model.id}/`), [], "nothing is stored before the download");
  });

  test("refuses with 422, storing nothing, a link that is not http(s), has credentials, is too long or points into WEBHOOK_DENIED_NETWORKS, and the wrong combinations of parts", async () => {
    const before = await footprint(h);
    const onnx: FilePart = { name: "modelFile", filename: "m.onnx", content: Buffer.from("x") };
    const index: FilePart = { name: "indexFile", filename: "m.index", content: Buffer.from("x") };
    const cases: Array<[Record<string, string>, FilePart[], RegExp]> = [
      [{ modelUrl: "file:///etc/passwd" }, [], /^modelUrl must use http or https, not file$/],
      [{ modelUrl: "ftp://example.com/m.pth" }, [], /^modelUrl must use http or https, not ftp$/],
      [{ modelUrl: "example.com/m.pth" }, [], /^modelUrl must be an absolute URL/],
      [{ modelUrl: "https://me:secret@example.com/m.pth" }, [], /^modelUrl must not contain credentials \(user:password@\)/],
      [{ modelUrl: `https://example.com/${"m".repeat(2048)}.pth` }, [], /^modelUrl must be at most 2048 characters$/],
      [
        { modelUrl: "http://169.254.169.254/latest/meta-data" },
        [],
        /^modelUrl points to 169\.254\.169\.254, in a network this service does not download from \(WEBHOOK_DENIED_NETWORKS\)$/,
      ],
      [{ modelUrl: "http://[::1]:8080/m.pth" }, [], /^modelUrl points to ::1/],
      [{ modelUrl: "https://example.com/m.pth", indexUrl: "http://10.0.0.5/m.index" }, [], /^indexUrl points to 10\.0\.0\.5/],
      [{ modelUrl: "https://example.com/m.pth" }, [onnx], /^send exactly one of modelFile .*, modelUrl .* or referenceFile/],
      [{}, [], /^send exactly one of modelFile/],
      [{ indexUrl: "https://example.com/m.index" }, [onnx], /^indexUrl goes with a modelUrl/],
      [
        { modelUrl: "https://example.com/m.pth" },
        [index],
        /^indexFile goes with a modelFile; with a modelUrl, send the index's link as indexUrl$/,
      ],
    ];
    for (const [fields, files, message] of cases) {
      const res = await post(fields, files);
      assert.equal(res.statusCode, 422, `${JSON.stringify(fields)}: ${res.body}`);
      assert.match(res.json().message, message);
    }
    await assertUnchanged(h, before);
  });
});

describe("POST /voice-models as a plain form (application/x-www-form-urlencoded, as curl -d sends it)", () => {
  const postForm = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    h.app.inject({
      method: "POST",
      url: "/api/kits/v1/voice-models",
      payload: new URLSearchParams(fields).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", ...me.auth, ...headers },
    });

  test("an import by link is created from the form as from a multipart one, and an Idempotency-Key replays it", async () => {
    const fields = {
      metadata: JSON.stringify({ title: "Linked by form" }),
      modelUrl: "https://example.com/voices/Form.pth",
      indexUrl: "https://example.com/voices/Form.index",
    };
    const res = await postForm(fields, { "idempotency-key": "form-import-1" });
    assert.equal(res.statusCode, 201, res.body);
    const model = res.json();
    assert.deepEqual([model.title, model.state, model.usable], ["Linked by form", "pending", false]);
    const row = await h.prisma.voiceModel.findUniqueOrThrow({ where: { id: model.id } });
    assert.equal(row.sourceUrl, "https://example.com/voices/Form.pth");
    assert.deepEqual(row.metadata, { source: "url", indexUrl: "https://example.com/voices/Form.index" });
    const again = await postForm(fields, { "idempotency-key": "form-import-1" });
    assert.equal(again.statusCode, 201);
    assert.equal(again.json().id, model.id, "the replay answers the same model");
  });

  test("the same validation and errors as a multipart form, storing nothing; a body that is no form is a 400 naming the forms taken", async () => {
    const before = await footprint(h);
    const title = JSON.stringify({ title: "x" });
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ metadata: title, modelUrl: "file:///etc/passwd" }, /^modelUrl must use http or https, not file$/],
      [{ metadata: title, modelUrl: "http://10.1.2.3/m.pth" }, /^modelUrl points to 10\.1\.2\.3/],
      [{ metadata: title }, /^send exactly one of modelFile/],
      [
        { metadata: title, indexUrl: "https://example.com/m.index" },
        /^send exactly one of modelFile|^indexUrl goes with a modelUrl/,
      ],
    ];
    for (const [fields, message] of cases) {
      const res = await postForm(fields);
      assert.equal(res.statusCode, 422, `${JSON.stringify(fields)}: ${res.body}`);
      assert.match(res.json().message, message);
    }
    const text = await h.app.inject({
      method: "POST",
      url: "/api/kits/v1/voice-models",
      payload: "modelUrl=https://example.com/m.pth",
      headers: { "content-type": "text/plain", ...me.auth },
    });
    assert.equal(text.statusCode, 400, text.body);
    assert.match(
      text.json().message,
      /^request body must be a form \(multipart\/form-data or application\/x-www-form-urlencoded\) or a JSON object$/,
    );
    await assertUnchanged(h, before);
  });
});

describe("what a voice model still needs (missingAssets)", () => {
  const contentVec = () => path.join(models, "voices", "vec-768-layer-12.onnx");
  /** The record, polled until `done` holds (the file checks are cached for 2 s). */
  const recordOnce = async (id: number, done: (m: any) => boolean) => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const model = (await get(`voice-models/${id}`)).json();
      if (done(model) || Date.now() > deadline) return model;
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  test("an RVC model's record and the list name the ContentVec it needs and RMVPE as a recommendation, each with its command; a native voice needs nothing", async () => {
    const v2 = await h.createModel({
      title: "RVC v2",
      architecture: "rvc",
      ownerId: me.callerId,
      metadata: { rvc: { version: "v2" } },
    });
    const v1 = await h.createModel({
      title: "RVC v1",
      architecture: "rvc",
      ownerId: me.callerId,
      metadata: { rvc: { version: "v1" } },
    });
    const native = await h.createModel({ title: "Native", ownerId: me.callerId });
    const record = (await get(`voice-models/${v2.id}`)).json();
    assert.deepEqual(record.missingAssets, [
      {
        asset: "contentvec",
        setting: "VOICE_CONTENTVEC_MODEL",
        required: true,
        install: "./mixdown.sh models pull hubert",
        message:
          "RVC v2 models need the ContentVec model (VOICE_CONTENTVEC_MODEL), which is not installed: install it with `./mixdown.sh models pull hubert`",
      },
      {
        asset: "rmvpe",
        setting: "VOICE_RMVPE_MODEL",
        required: false,
        install: "./mixdown.sh models pull rmvpe",
        message:
          "recommended: the RMVPE pitch model (VOICE_RMVPE_MODEL) is not installed, so conversions track pitch with YIN, which is less accurate on singing: install it with `./mixdown.sh models pull rmvpe`",
      },
    ]);
    const listed = (await get("voice-models?myModels=true&perPage=100")).json().data;
    const byId = new Map(listed.map((m: any) => [m.id, m.missingAssets.map((a: any) => `${a.asset}:${a.required}`)]));
    assert.deepEqual(byId.get(v2.id), ["contentvec:true", "rmvpe:false"]);
    assert.deepEqual(byId.get(v1.id), ["contentvec-v1:true", "rmvpe:false"]);
    assert.deepEqual(byId.get(native.id), []);

    // Installed while the API runs: the records say so (within the 2 s the checks are cached).
    await mkdir(path.dirname(contentVec()), { recursive: true });
    await writeFile(contentVec(), "a ContentVec model");
    const after = await recordOnce(v2.id, (m) => m.missingAssets.length === 1);
    assert.deepEqual(
      after.missingAssets.map((a: any) => a.asset),
      ["rmvpe"],
    );
  });

  test("a conversion create with an RVC model whose ContentVec is not installed answers 422 naming `./mixdown.sh models pull hubert`, and stores nothing", async () => {
    const v1 = await h.createModel({
      title: "RVC v1",
      architecture: "rvc",
      ownerId: me.callerId,
      metadata: { rvc: { version: "v1" } },
    });
    const before = await footprint(h);
    const { payload, headers } = multipart({ voiceModelId: v1.id }, [
      { name: "soundFile", filename: "take.wav", content: await audio("wav") },
    ]);
    const res = await h.app.inject({
      method: "POST",
      url: "/api/kits/v1/voice-conversions",
      payload,
      headers: { ...headers, ...me.auth },
    });
    assert.equal(res.statusCode, 422, res.body);
    assert.equal(
      res.json().message,
      `voiceModelId: voice model ${v1.id} cannot be used for conversions on this server yet: RVC v1 models need the 256-d ContentVec model (VOICE_CONTENTVEC_V1_MODEL), which is not installed: install it with \`./mixdown.sh models pull hubert\``,
    );
    await assertUnchanged(h, before);
  });
});
