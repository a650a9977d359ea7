import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ManifestError, parseManifest, parseMdxManifest } from "../src/index.ts";
import { readManifestDirectory } from "../src/families/manifests.ts";

const REPO_MODELS = join(import.meta.dirname, "../../../models");
const FIXTURES = join(import.meta.dirname, "fixtures");
const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;

describe("the manifests the project's own tools wrote", () => {
  it("every separation manifest committed in models/ reads as it is written, and the catalogue beside them is not one", async () => {
    const { manifests, invalid } = await readManifestDirectory(REPO_MODELS);
    assert.deepEqual(
      manifests.map((m) => m.manifest.name),
      ["stems", "vocals", "vocalsplit"],
    );
    for (const { path, manifest } of manifests) assert.deepEqual(manifest, readJson(path), path);
    assert.deepEqual(
      invalid.map((i) => [i.path, i.error]),
      [
        [
          join(REPO_MODELS, "catalogue.json"),
          `${join(REPO_MODELS, "catalogue.json")}: "architecture" must be a non-empty string`,
        ],
      ],
    );
  });

  it("every exported test model of each family reads as it is written", () => {
    const written = readdirSync(FIXTURES, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".json"))
      .map((file) => join(FIXTURES, file))
      .filter((path) => "architecture" in readJson(path));
    assert.deepEqual(written.map((path) => readJson(path).architecture).sort(), [
      "bs_roformer",
      "htdemucs",
      "mdx23c",
      "mel_band_roformer",
    ]);
    for (const path of written) assert.deepEqual(parseManifest(readJson(path), path), readJson(path), path);
  });
});

describe("reading a manifest", () => {
  it("keeps the fields its family declares and fills in the defaults of absent or null ones", () => {
    const vocals = readJson(join(REPO_MODELS, "vocals.json"));
    const { compensate: _, ...withoutCompensate } = vocals;
    assert.deepEqual(parseManifest({ ...withoutCompensate, comment: "mine", description: 1 }, "v.json"), {
      ...vocals,
      compensate: 1,
    });
    assert.equal(parseMdxManifest({ ...vocals, compensate: null }, "v.json").compensate, 1);
    const roformer = readJson(join(FIXTURES, "bs_roformer/bs_roformer.json"));
    const { normalized: __, ...withoutNormalized } = roformer;
    assert.deepEqual(parseManifest({ ...withoutNormalized, zeroDc: null }, "bs.json"), {
      ...roformer,
      normalized: false,
      zeroDc: true,
    });
  });

  it("returns its own copy: changing what it read leaves the caller's object as it was", () => {
    const json = readJson(join(FIXTURES, "htdemucs/htdemucs-tiny.json"));
    const read = parseManifest(json, "h.json") as { stems: string[]; members: { file: string }[] };
    read.stems.push("more");
    read.members[0].file = "other.onnx";
    assert.deepEqual(json, readJson(join(FIXTURES, "htdemucs/htdemucs-tiny.json")));
  });
});

/**
 * The house's wording of each problem a manifest can have, one family's manifest with one fault
 * each: what an operator reads in `models list` and in the worker's refusals. `read` is the
 * manifest patched (a key set to undefined is removed); the message follows `m.json: `.
 */
type Case = [what: string, base: Record<string, unknown>, patch: Record<string, unknown>, message: string];

const vocals = readJson(join(REPO_MODELS, "vocals.json"));
const stems = readJson(join(REPO_MODELS, "stems.json"));
const tiny = readJson(join(FIXTURES, "htdemucs/htdemucs-tiny.json")) as Record<string, unknown> & { members: object[] };
/** The fixture made a bag of two, each member weighted for two of the four sources. */
const bag = {
  ...tiny,
  members: [...tiny.members, { file: "b.onnx", segmentSamples: 110250 }],
  weights: [
    [1, 0, 1, 0],
    [0, 1, 1, 1],
  ],
};
const bs = readJson(join(FIXTURES, "bs_roformer/bs_roformer.json"));
const mel = readJson(join(FIXTURES, "mel_band_roformer/mel_band_roformer.json"));
const mdx23c = readJson(join(FIXTURES, "mdx23c/mdx23c.json"));
const STEM_NAME = "must be a stem name (letters, digits, _ or -)";

const CASES: Case[] = [
  ["a name that is empty", vocals, { name: "" }, '"name" must be a non-empty string'],
  ["a rate out of range", vocals, { sampleRate: 999 }, '"sampleRate" must be an integer in 1000..384000'],
  ["an odd MDX nFft", vocals, { nFft: 4095 }, '"nFft" must be even'],
  [
    "a hopLength that is no integer, named with its range from nFft",
    vocals,
    { hopLength: "1024" },
    '"hopLength" must be an integer in 1..4096',
  ],
  ["a hopLength above nFft", vocals, { hopLength: 4097 }, '"hopLength" must be an integer in 1..4096'],
  ["a dimF above nFft/2+1", vocals, { dimF: 2050 }, '"dimF" must be an integer in 1..2049'],
  ["a missing dimT", vocals, { dimT: undefined }, '"dimT" must be an integer in 2..9007199254740991'],
  [
    "a chunk that trimming would empty",
    vocals,
    { dimT: 4 },
    "a chunk of hopLength·(dimT−1) = 3072 samples leaves nothing after trimming nFft/2 at each side",
  ],
  ["a compensate of 0", vocals, { compensate: 0 }, '"compensate" must be a positive number'],
  ["a primary stem that is not a file name", vocals, { primaryStem: "../x" }, `"primaryStem" ${STEM_NAME}, got "../x"`],
  ["no stems", vocals, { stems: [] }, '"stems" must be a non-empty array'],
  ["a stem named twice", stems, { stems: ["vocals", "drums", "vocals"] }, '"stems" has duplicates'],
  ["a stem that is no string", stems, { stems: ["vocals", 5] }, `"stems[1]" ${STEM_NAME}, got 5`],
  ["a single stem that is not the primary", vocals, { stems: ["drums"] }, 'single-stem model: "stems" must be ["vocals"]'],
  [
    "a single-stem model without secondaryStem",
    vocals,
    { secondaryStem: undefined },
    `"secondaryStem" (required for single-stem models) ${STEM_NAME}, got undefined`,
  ],
  [
    "a single-stem model's secondaryStem that is not a file name",
    vocals,
    { secondaryStem: "a/b" },
    `"secondaryStem" (required for single-stem models) ${STEM_NAME}, got "a/b"`,
  ],
  ["a secondaryStem that is the primary", vocals, { secondaryStem: "vocals" }, '"secondaryStem" must differ from "primaryStem"'],
  ["a multi-stem model's secondaryStem", stems, { secondaryStem: "backing" }, '"secondaryStem" is only for single-stem models'],
  ["a primary stem the model does not output", stems, { primaryStem: "lead" }, '"primaryStem" "lead" is not one of "stems"'],
  [
    "an unknown graphOptimization",
    vocals,
    { graphOptimization: "fast" },
    '"graphOptimization" must be one of disabled, basic, extended, all, got "fast"',
  ],
  [
    "two faults: the rule on the earlier field is the one named",
    vocals,
    { dimT: 4, graphOptimization: "fast" },
    "a chunk of hopLength·(dimT−1) = 3072 samples leaves nothing after trimming nFft/2 at each side",
  ],
  ["two faults: the earlier field is the one named", vocals, { name: 1, file: "" }, '"name" must be a non-empty string'],

  ["an HTDemucs nFft that is not a multiple of 4", bag, { nFft: 4098 }, '"nFft" must be a multiple of 4'],
  ["an HTDemucs hopLength other than nFft / 4", bag, { hopLength: 512 }, '"hopLength" must be nFft / 4 = 1024'],
  [
    "a source named backing",
    bag,
    { stems: ["drums", "bass", "other", "backing"] },
    '"stems" must not name "backing": it is derived (mixture − vocals)',
  ],
  ["no members", bag, { members: [] }, '"members" must be a non-empty array'],
  ["a member that is no object", bag, { members: [5] }, '"members[0]" must be an object'],
  [
    "a member without a file",
    bag,
    { members: [bag.members[0], { segmentSamples: 110250 }] },
    '"members[1].file" must be a non-empty string',
  ],
  [
    "a segment that is no integer",
    bag,
    { members: [{ file: "htdemucs-tiny.onnx", segmentSamples: "long" }, bag.members[1]] },
    '"members[0].segmentSamples" must be an integer ≥ nFft (4096)',
  ],
  [
    "a segment shorter than nFft",
    bag,
    { members: [bag.members[0], { file: "b.onnx", segmentSamples: 4095 }] },
    '"members[1].segmentSamples" must be an integer ≥ nFft (4096)',
  ],
  [
    "a file other than the first member's",
    bag,
    { file: "b.onnx" },
    `"file" must be the first member's file ("htdemucs-tiny.onnx")`,
  ],
  [
    "one row of weights for two members",
    bag,
    { weights: [[1, 1, 1, 1]] },
    '"weights" must be 2 row(s) of 4 finite numbers (per member, per stem)',
  ],
  [
    "a weight that is no number",
    bag,
    { weights: [bag.weights[0], [0, 1, 1, "1"]] },
    '"weights" must be 2 row(s) of 4 finite numbers (per member, per stem)',
  ],
  [
    "a stem no member is weighted for",
    bag,
    {
      weights: [
        [1, 0, 1, 1],
        [1, 0, 1, 1],
      ],
    },
    '"weights" for stem "bass" sum to 0',
  ],
  ["a negative shifts", bag, { shifts: -1 }, '"shifts" must be an integer in 0..9007199254740991'],

  ["a chunk shorter than nFft", bs, { chunkSize: 1000 }, '"chunkSize" must be an integer in 2048..9007199254740991'],
  ["an overlap above the chunk's length", bs, { numOverlap: 131073 }, '"numOverlap" must be an integer in 1..131072'],
  ["a batch of none", bs, { batchSize: 0 }, '"batchSize" must be an integer in 1..1024'],
  ["a normalized that is no boolean", bs, { normalized: "no" }, '"normalized" must be true or false'],
  ["a secondaryStem that is the stem", bs, { secondaryStem: "vocals" }, '"secondaryStem" must differ from the stem'],
  ["a multi-stem RoFormer's secondaryStem", mel, { secondaryStem: "backing" }, '"secondaryStem" is only for single-stem models'],
  ["an MDX23C hopLength above nFft", mdx23c, { hopLength: 9000 }, '"hopLength" must be an integer in 1..8192'],
  ["an MDX23C dimF above nFft/2+1", mdx23c, { dimF: 4098 }, '"dimF" must be an integer in 1..4097'],
  [
    "an MDX23C chunk that is not whole hops",
    mdx23c,
    { chunkSize: 134145 },
    '"chunkSize" 134145 must be a multiple of "hopLength" 1024',
  ],
];

describe("a manifest's problems, in the house's words", () => {
  for (const [what, base, patch, message] of CASES)
    it(`names ${what}: ${message}`, () => {
      const json: Record<string, unknown> = { ...structuredClone(base), ...patch };
      for (const [key, value] of Object.entries(patch)) if (value === undefined) delete json[key];
      assert.throws(
        () => parseManifest(json, "m.json"),
        (err: Error) => err instanceof ManifestError && err.message === `m.json: ${message}`,
        `expected "m.json: ${message}"`,
      );
    });

  it("names what is not a manifest at all, and an architecture that is not a name", () => {
    assert.throws(() => parseManifest([], "m.json"), { message: "m.json: manifest must be a JSON object" });
    assert.throws(() => parseManifest({ ...vocals, architecture: "" }, "m.json"), {
      message: 'm.json: "architecture" must be a non-empty string',
    });
    assert.throws(() => parseMdxManifest({ ...vocals, architecture: "demucs" }, "m.json"), {
      message: 'm.json: unsupported architecture "demucs" (only "mdx")',
    });
  });
});
