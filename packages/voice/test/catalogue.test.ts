import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { buildInstrumentModel, type InstrumentRecipe } from "../scripts/soundfont.ts";
import { catalogueRows, readVoiceCatalogue } from "../src/catalogue.ts";

const modelsDir = fileURLToPath(new URL("../../../models/", import.meta.url));
const recipe = JSON.parse(await readFile(join(modelsDir, "voices", "recipe.json"), "utf8")) as {
  voices: Array<{ slug: string }>;
  instruments: InstrumentRecipe;
};

describe("the built-in catalogue (models/voices)", () => {
  test("every entry's file is the one the manifest names (SHA-256), and the recipe's voices and instruments are all there", async () => {
    const catalogue = await readVoiceCatalogue(modelsDir);
    for (const entry of catalogue) {
      const bytes = await readFile(join(modelsDir, entry.file));
      assert.equal(createHash("sha256").update(bytes).digest("hex"), entry.sha256, entry.file);
    }
    assert.deepEqual(
      catalogue.map((v) => v.slug),
      [...recipe.voices.map((v) => v.slug), ...recipe.instruments.items.map((i) => i.slug)],
    );
  });

  test("the default instruments are registered as instrument models with their General MIDI program; the voices as voices", async () => {
    const rows = await catalogueRows(modelsDir);
    const instruments = rows.filter((r) => r.instrument);
    assert.deepEqual(
      instruments.map((r) => [r.slug, r.metadata.gmProgram]),
      [
        ["instrument-violin", 40],
        ["instrument-alto-sax", 65],
        ["instrument-flute", 73],
      ],
    );
    assert.ok(instruments.every((r) => r.tags.includes("instrument") && r.metadata.espeak === undefined));
    const voices = rows.filter((r) => !r.instrument);
    assert.equal(voices.length, recipe.voices.length);
    assert.ok(voices.every((r) => typeof r.metadata.espeak === "string" && r.metadata.gmProgram === undefined));
  });

  test("an instrument model rebuilt from the recipe (fluidsynth, FluidR3_GM) is byte for byte the committed one", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mixdown-instrument-"));
    try {
      const flute = recipe.instruments.items.find((i) => i.slug === "instrument-flute")!;
      const { onnx } = await buildInstrumentModel(flute, recipe.instruments, dir);
      const committed = (await readVoiceCatalogue(modelsDir)).find((v) => v.slug === flute.slug)!;
      assert.equal(createHash("sha256").update(onnx).digest("hex"), committed.sha256);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
