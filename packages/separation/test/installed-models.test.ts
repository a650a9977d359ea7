import assert from "node:assert/strict";
import { copyFile, mkdtemp, readFile, rm, stat, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, test } from "node:test";
import { ensembleStemsFor, readInstalledModels, resolveModelList } from "../src/installed-models.ts";
import { installedModel as entry } from "./support/installed-models.ts";

const HTDEMUCS = join(import.meta.dirname, "fixtures/htdemucs");

test("the installed models count every member file of a bag in its size, and lists a bag with a missing member as invalid", async () => {
  const dir = await mkdtemp(join(tmpdir(), "mixdown-installed-bag-"));
  try {
    const single = JSON.parse(await readFile(join(HTDEMUCS, "htdemucs-tiny.json"), "utf8"));
    const bag = {
      ...single,
      name: "bag",
      file: "bag.0.onnx",
      members: [single.members[0], single.members[0]].map((m: object, i: number) => ({ ...m, file: `bag.${i}.onnx` })),
      weights: [single.weights[0], single.weights[0]],
    };
    await writeFile(join(dir, "bag.json"), JSON.stringify(bag));
    for (const i of [0, 1]) await copyFile(join(HTDEMUCS, "htdemucs-tiny.onnx"), join(dir, `bag.${i}.onnx`));
    const one = (await stat(join(HTDEMUCS, "htdemucs-tiny.onnx"))).size;
    const { models } = await readInstalledModels(dir);
    assert.equal(models.length, 1);
    assert.equal(models[0]!.family, "htdemucs");
    assert.equal(models[0]!.sizeBytes, 2 * one);
    await unlink(join(dir, "bag.1.onnx"));
    const after = await readInstalledModels(dir);
    assert.deepEqual(after.models, []);
    assert.match(after.invalid[0]!.error, /weights file bag\.1\.onnx is missing/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

describe("ensembleStemsFor", () => {
  const vocals = { stems: ["vocals"], outputStems: ["vocals", "instrumental"] };
  const stems = { stems: ["vocals", "drums", "bass", "other"], outputStems: ["vocals", "drums", "bass", "other", "backing"] };
  const six = {
    stems: ["drums", "bass", "other", "vocals", "guitar", "piano"],
    outputStems: ["drums", "bass", "other", "vocals", "guitar", "piano", "backing"],
  };

  it("a vocal separation combines each model's vocal pair, whatever its backing is called", () => {
    assert.deepEqual(ensembleStemsFor([vocals, stems], "vocal-separation"), {
      stems: [
        { name: "vocals", from: ["vocals", "vocals"] },
        { name: "backing", from: ["instrumental", "backing"] },
      ],
      instruments: ["vocals", "backing"],
    });
  });

  it("a stem split publishes the stems both networks output, in the first's order, and combines their backings too", () => {
    const { stems: combined, instruments } = ensembleStemsFor([six, stems], "stem-split");
    assert.deepEqual(instruments, ["drums", "bass", "other", "vocals"]);
    assert.deepEqual(
      combined.map((s) => s.name),
      ["drums", "bass", "other", "vocals", "backing"],
    );
  });

  it("models with no stem in common give nothing", () => {
    const guitars = { stems: ["guitar_l", "guitar_r"], outputStems: ["guitar_l", "guitar_r"] };
    assert.deepEqual(ensembleStemsFor([stems, guitars], "stem-split"), { stems: [], instruments: [] });
  });
});

describe("resolveModelList", () => {
  const vocals = entry("vocals", ["vocals"], ["vocals", "instrumental"]);
  const stems = entry("stems", ["vocals", "drums", "bass", "other"], ["vocals", "drums", "bass", "other", "backing"]);
  const guitars = entry("guitars", ["guitar_l", "guitar_r"], ["guitar_l", "guitar_r"]);
  const installed = [guitars, stems, vocals];

  it("one model: the model, no ensemble", () => {
    assert.deepEqual(resolveModelList(installed, ["vocals"], "vocal-separation"), { members: [vocals] });
  });

  it("an ensemble: the members in the order named, and what they write together", () => {
    assert.deepEqual(resolveModelList(installed, ["stems", "vocals"], "vocal-separation"), {
      members: [stems, vocals],
      ensemble: ensembleStemsFor([stems, vocals], "vocal-separation"),
    });
  });

  it("names the first problem: a model not installed, one that cannot serve the kind (with those that can), no stem in common", () => {
    assert.deepEqual(resolveModelList(installed, ["vocals", "karaoke"], "vocal-separation"), {
      problem: "not-installed",
      name: "karaoke",
      installed: ["guitars", "stems", "vocals"],
    });
    assert.deepEqual(resolveModelList(installed, ["vocals"], "stem-split"), {
      problem: "cannot-serve",
      name: "vocals",
      model: vocals,
      fit: ["guitars", "stems"],
    });
    assert.deepEqual(resolveModelList(installed, ["stems", "guitars"], "stem-split"), {
      problem: "no-common-stem",
      members: [stems, guitars],
    });
  });
});
