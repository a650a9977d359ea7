import assert from "node:assert/strict";
import { copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { SeparationJobRepository } from "@mixdown/db";
import { InstalledSeparationModels } from "../src/kinds/separation/installed-models.ts";
import { assertUnchanged, audio, footprint, multipart, startHarness, type Harness, type FilePart } from "./helpers.ts";

const REPO_MODELS = resolve(import.meta.dirname, "../../../models");

let h: Harness;
let modelsDir: string;
before(async () => {
  // The repository's two models plus a 6-stem manifest (its weights are a copy of the stems
  // model's file: the API reads manifests only and never opens the weights).
  modelsDir = await mkdtemp(join(tmpdir(), "mixdown-api-models-"));
  for (const f of ["vocals.json", "vocals.onnx", "stems.json", "stems.onnx"])
    await copyFile(join(REPO_MODELS, f), join(modelsDir, f));
  await copyFile(join(REPO_MODELS, "stems.onnx"), join(modelsDir, "six.onnx"));
  const stems = ["drums", "bass", "other", "vocals", "guitar", "piano"];
  await writeFile(
    join(modelsDir, "six.json"),
    JSON.stringify({
      name: "six",
      architecture: "mdx",
      file: "six.onnx",
      sampleRate: 44100,
      nFft: 4096,
      hopLength: 1024,
      dimF: 1024,
      dimT: 256,
      primaryStem: "vocals",
      stems,
    }),
  );
  // Not installed: a manifest whose weights are missing, and one that is not a manifest.
  await writeFile(
    join(modelsDir, "ghost.json"),
    JSON.stringify({
      name: "ghost",
      architecture: "mdx",
      file: "ghost.onnx",
      sampleRate: 44100,
      nFft: 4096,
      hopLength: 1024,
      dimF: 1024,
      dimT: 256,
      primaryStem: "vocals",
      secondaryStem: "backing",
      stems: ["vocals"],
    }),
  );
  await writeFile(join(modelsDir, "broken.json"), "{");
  h = await startHarness("s3", { MODELS_DIR: modelsDir, SEPARATION_MODEL_STEMS: "six" });
});
after(async () => {
  await h?.stop();
  await rm(modelsDir, { recursive: true, force: true });
});

function create(
  path: string,
  auth: Record<string, string>,
  content: Buffer,
  fields: Record<string, string>,
  extra: FilePart[] = [],
  headers: Record<string, string> = {},
) {
  const form = multipart(fields, [{ name: "inputFile", filename: "track.wav", content }, ...extra]);
  return h.app.inject({
    method: "POST",
    url: `/api/kits/v1/${path}`,
    headers: { ...form.headers, ...auth, ...headers },
    payload: form.payload,
  });
}

describe("GET /separation-models", () => {
  test("lists the installed models from their manifests: family, stems, rate, what each serves and which are the defaults", async () => {
    const caller = await h.newCaller();
    const res = await h.app.inject({ method: "GET", url: "/api/kits/v1/separation-models", headers: caller.auth });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), {
      data: [
        {
          name: "six",
          family: "mdx",
          stems: ["drums", "bass", "other", "vocals", "guitar", "piano"],
          sampleRate: 44100,
          serves: { vocalSeparation: true, stemSplit: true },
          default: { vocalSeparation: false, stemSplit: true },
        },
        {
          name: "stems",
          family: "mdx",
          stems: ["vocals", "drums", "bass", "other"],
          sampleRate: 44100,
          serves: { vocalSeparation: true, stemSplit: true },
          default: { vocalSeparation: false, stemSplit: false },
        },
        {
          name: "vocals",
          family: "mdx",
          stems: ["vocals"],
          sampleRate: 44100,
          serves: { vocalSeparation: true, stemSplit: false },
          default: { vocalSeparation: true, stemSplit: false },
        },
      ],
    });
  });

  test("needs a key like every other route", async () => {
    const res = await h.app.inject({ method: "GET", url: "/api/kits/v1/separation-models" });
    assert.equal(res.statusCode, 401);
    assert.deepEqual(Object.keys(res.json()).sort(), ["error", "message", "statusCode"]);
  });

  test("is in the OpenAPI document with its schema", async () => {
    const doc = (await h.app.inject({ method: "GET", url: "/docs/json" })).json();
    assert.ok(doc.paths["/api/kits/v1/separation-models"]?.get, "route documented");
    assert.deepEqual(Object.keys(doc.components.schemas.SeparationModel.properties).sort(), [
      "default",
      "family",
      "name",
      "sampleRate",
      "serves",
      "stems",
    ]);
    assert.ok(doc.paths["/api/kits/v1/stem-splits"].post.requestBody.content["multipart/form-data"].schema.properties.model);
  });
});

describe("the model field of a create", () => {
  test("a vocal separation may name the stems model: stored on the row and shown on the record", async () => {
    const caller = await h.newCaller();
    const res = await create("vocal-separations", caller.auth, await audio("wav"), { model: "stems" });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().model, "stems");
    const row = await new SeparationJobRepository(h.prisma).findById(res.json().id);
    assert.deepEqual(row?.models, ["stems"]);
  });

  test("is accepted as a text file part too", async () => {
    const caller = await h.newCaller();
    const part: FilePart = { name: "model", filename: "model.txt", content: Buffer.from("six"), contentType: "text/plain" };
    const res = await create("stem-splits", caller.auth, await audio("wav"), {}, [part]);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().model, "six");
  });

  test("an unknown name is a 422 that lists the installed models, and stores nothing", async () => {
    const caller = await h.newCaller();
    const content = await audio("wav");
    const before = await footprint(h);
    for (const name of ["htdemucs", "ghost", ""]) {
      const res = await create("vocal-separations", caller.auth, content, { model: name });
      assert.equal(res.statusCode, 422, res.body);
      assert.deepEqual(Object.keys(res.json()).sort(), ["error", "message", "statusCode"]);
      assert.equal(
        res.json().message,
        `model ${JSON.stringify(name)} is not an installed separation model (installed: six, stems, vocals)`,
      );
    }
    await assertUnchanged(h, before);
  });

  test("a stem split naming a single-stem model is a 422 naming the models that can serve it, and stores nothing", async () => {
    const caller = await h.newCaller();
    const before = await footprint(h);
    const res = await create("stem-splits", caller.auth, await audio("wav"), { model: "vocals" });
    assert.equal(res.statusCode, 422, res.body);
    assert.match(
      res.json().message,
      /^model "vocals" \(stems: vocals\) cannot serve a stem-split: it needs a multi-stem model \(installed that can: six, stems\)$/,
    );
    await assertUnchanged(h, before);
  });

  test("is part of the Idempotency-Key's request: the same key with another model is a 409", async () => {
    const caller = await h.newCaller();
    const content = await audio("wav");
    const key = { "idempotency-key": `model-${Date.now()}` };
    const first = await create("stem-splits", caller.auth, content, { model: "stems" }, [], key);
    assert.equal(first.statusCode, 200, first.body);
    const replay = await create("stem-splits", caller.auth, content, { model: "stems" }, [], key);
    assert.equal(replay.json().id, first.json().id);
    const other = await create("stem-splits", caller.auth, content, { model: "six" }, [], key);
    assert.equal(other.statusCode, 409, other.body);
  });
});

describe("ensembles: a model field naming several models", () => {
  test("a vocal separation of vocals and stems: stored normalised with the default algorithm, avg_wave, and shown on the record", async () => {
    const caller = await h.newCaller();
    const res = await create("vocal-separations", caller.auth, await audio("wav"), { model: " vocals , stems" });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().model, "vocals,stems");
    assert.equal(res.json().ensemble, "avg_wave");
    const row = await new SeparationJobRepository(h.prisma).findById(res.json().id);
    assert.deepEqual([row?.models, row?.ensemble], [["vocals", "stems"], "avg_wave"]);
  });

  test("a stem split of six and stems with the algorithm named; a single model's record says ensemble null", async () => {
    const caller = await h.newCaller();
    const res = await create("stem-splits", caller.auth, await audio("wav"), { model: "six,stems", ensemble: "uvr_max_spec" });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual([res.json().model, res.json().ensemble], ["six,stems", "uvr_max_spec"]);
    const single = await create("stem-splits", caller.auth, await audio("wav"), { model: "six" });
    assert.deepEqual([single.json().model, single.json().ensemble], ["six", null]);
  });

  test("each refusal is a 422 naming the problem, and stores nothing", async () => {
    const caller = await h.newCaller();
    const content = await audio("wav");
    const before = await footprint(h);
    const cases: Array<[path: string, fields: Record<string, string>, message: RegExp]> = [
      [
        "vocal-separations",
        { model: "vocals,ghost" },
        /^model "ghost" is not an installed separation model \(installed: six, stems, vocals\)$/,
      ],
      ["vocal-separations", { model: "vocals,stems,vocals" }, /^model names "vocals" twice/],
      ["vocal-separations", { model: "vocals,,stems" }, /has an empty model name/],
      ["vocal-separations", { model: "vocals", ensemble: "avg_wave" }, /^ensemble needs two or more models/],
      ["vocal-separations", { ensemble: "median_wave" }, /^ensemble needs a model field naming two or more models/],
      [
        "vocal-separations",
        { model: "vocals,stems", ensemble: "loudest" },
        /^ensemble "loudest" is not an ensemble algorithm \(one of avg_wave, median_wave, min_mag, max_mag, avg_mag, uvr_max_spec, uvr_min_spec\)$/,
      ],
      ["stem-splits", { model: "six,vocals" }, /^model "vocals" \(stems: vocals\) cannot serve a stem-split/],
    ];
    for (const [path, fields, message] of cases) {
      const res = await create(path, caller.auth, content, fields);
      assert.equal(res.statusCode, 422, `${JSON.stringify(fields)}: ${res.body}`);
      assert.deepEqual(Object.keys(res.json()).sort(), ["error", "message", "statusCode"]);
      assert.match(res.json().message, message, JSON.stringify(fields));
    }
    await assertUnchanged(h, before);
  });

  test("a stem split of models with no stem in common is a 422 listing their stems, and stores nothing", async () => {
    // installed for this test only (the API reads the manifests on every create)
    await copyFile(join(REPO_MODELS, "stems.onnx"), join(modelsDir, "duo.onnx"));
    const manifest = { ...JSON.parse(await readFile(join(modelsDir, "six.json"), "utf8")), name: "duo", file: "duo.onnx" };
    await writeFile(
      join(modelsDir, "duo.json"),
      JSON.stringify({ ...manifest, primaryStem: "guitar_l", stems: ["guitar_l", "guitar_r"] }),
    );
    try {
      const caller = await h.newCaller();
      const before = await footprint(h);
      const res = await create("stem-splits", caller.auth, await audio("wav"), { model: "stems,duo" });
      assert.equal(res.statusCode, 422, res.body);
      assert.equal(
        res.json().message,
        "the models stems, duo have no stem in common (stems: vocals, drums, bass, other; duo: guitar_l, guitar_r), so their stem-split cannot be combined",
      );
      await assertUnchanged(h, before);
    } finally {
      await rm(join(modelsDir, "duo.json"));
      await rm(join(modelsDir, "duo.onnx"));
    }
  });

  test("GET /separation-models marks every member of a default ensemble as a default", async () => {
    const listed = await new InstalledSeparationModels(modelsDir, {
      vocalSeparation: ["vocals", "stems"],
      stemSplit: ["six"],
      vocalSplit: "none",
    }).list();
    assert.deepEqual(
      listed.map((m) => [m.name, m.default.vocalSeparation, m.default.stemSplit]),
      [
        ["six", false, true],
        ["stems", true, false],
        ["vocals", true, false],
      ],
    );
  });

  test("the OpenAPI document lists the ensemble field with its algorithms", async () => {
    const doc = (await h.app.inject({ method: "GET", url: "/docs/json" })).json();
    const form = doc.paths["/api/kits/v1/vocal-separations"].post.requestBody.content["multipart/form-data"].schema;
    assert.deepEqual(form.properties.ensemble.enum, [
      "avg_wave",
      "median_wave",
      "min_mag",
      "max_mag",
      "avg_mag",
      "uvr_max_spec",
      "uvr_min_spec",
    ]);
  });
});
