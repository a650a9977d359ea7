import assert from "node:assert/strict";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import onnxProto from "onnx-proto";
import { importModel } from "../src/import/index.ts";
import { ModelRegistry, separateFile } from "../src/index.ts";
import { readStereo, snrDb, type Stereo } from "./support/signals.ts";

/**
 * `models import` end to end for every PyTorch family: the random-weight checkpoint in the
 * upstream's own file format is identified, converted by Mixdown's own implementation (Debian's
 * PyTorch, installed by the import itself where it is missing), checked and installed; the
 * installed model then separates the fixture mixture and must match what the upstream code
 * computed from the same checkpoint (the references in each fixture folder) to ≥ 60 dB per stem.
 * So this pins the conversion, not only the committed ONNX files.
 */
const FIXTURES = join(import.meta.dirname, "fixtures");
const { onnx } = onnxProto;
const RATE = 44100;

interface Case {
  family: string;
  checkpoint: string;
  config?: string;
  mixture: string;
  /** the stems the upstream computed, and how to read each reference */
  references: () => Promise<Record<string, Stereo>>;
}

const msstReferences = (family: string, stems: string[]) => async () => {
  const out: Record<string, Stereo> = {};
  for (const stem of stems) out[stem] = await readStereo(join(FIXTURES, family, `reference-${stem}.flac`), RATE);
  return out;
};

const CASES: Case[] = [
  {
    family: "htdemucs",
    checkpoint: join(FIXTURES, "htdemucs/htdemucs-tiny.th"),
    mixture: join(FIXTURES, "htdemucs/mixture.flac"),
    references: async () => {
      const { gain } = JSON.parse(await readFile(join(FIXTURES, "htdemucs/reference/references.json"), "utf8")) as {
        gain: Record<string, number>;
      };
      const out: Record<string, Stereo> = {};
      for (const stem of Object.keys(gain)) {
        const { left, right } = await readStereo(join(FIXTURES, `htdemucs/reference/${stem}.flac`), RATE);
        out[stem] = { left: left.map((v) => v / gain[stem]), right: right.map((v) => v / gain[stem]) };
      }
      return out;
    },
  },
  ...(["bs_roformer", "mel_band_roformer", "mdx23c"] as const).map((family): Case => ({
    family,
    checkpoint: join(FIXTURES, family, `${family}.ckpt`),
    config: join(FIXTURES, family, `${family}.yaml`),
    mixture: join(FIXTURES, "msst/mixture.flac"),
    references: msstReferences(family, family === "bs_roformer" ? ["vocals"] : ["vocals", "other"]),
  })),
];

describe("models import converts each family's upstream checkpoint into a model that matches the upstream", () => {
  let modelsDir: string;
  let outDir: string;
  before(async () => {
    modelsDir = await mkdtemp(join(tmpdir(), "mixdown-import-families-"));
    outDir = await mkdtemp(join(tmpdir(), "mixdown-import-families-out-"));
  });
  after(async () => {
    await rm(modelsDir, { recursive: true, force: true });
    await rm(outDir, { recursive: true, force: true });
  });

  for (const c of CASES) {
    it(`${c.family}: imported from ${c.config ? ".ckpt + yaml" : ".th"}, then ≥ 60 dB per stem against the upstream`, async (t) => {
      const lines: string[] = [];
      const imported = await importModel({
        file: c.checkpoint,
        ...(c.config ? { config: c.config } : {}),
        modelsDir,
        name: `imported-${c.family}`,
        log: (line) => lines.push(line),
      });
      assert.equal(imported.family, c.family);
      assert.ok(
        lines.some((l) => l.includes(`Mixdown's own ${c.family} implementation`)),
        lines.join("\n"),
      );
      const registry = new ModelRegistry({ modelsDir, intraOpThreads: 2 });
      try {
        const model = await registry.load(imported.name);
        const result = await separateFile({
          inputPath: c.mixture,
          model,
          outDir: join(outDir, c.family),
          outputs: [{ format: "wav", sampleFormat: "f32" }],
        });
        const references = await c.references();
        const snr: Record<string, number> = {};
        for (const [stem, reference] of Object.entries(references))
          snr[stem] = snrDb(reference, await readStereo(result.stems[stem]!.wav!, RATE));
        t.diagnostic(`SNR dB ${JSON.stringify(snr)}`);
        for (const [stem, value] of Object.entries(snr)) assert.ok(value >= 60, `${stem}: ${value.toFixed(1)} dB`);
        if (c.family.endsWith("roformer")) {
          // attention head by head (the fixtures: 2 heads, one time and one frequency transformer):
          // one softmax per head, so a chunk holds one head's attention weights at a time
          const graph = onnx.ModelProto.decode(await readFile(model.onnxPath)).graph!;
          assert.equal(graph.node!.filter((n) => n.opType === "Softmax").length, 4);
        }
      } finally {
        await registry.close();
      }
    });
  }

  it("leaves only installed models behind (no staging folder)", async () => {
    const names = await readdir(modelsDir);
    assert.ok(!names.some((n) => n.startsWith(".import-")), names.join(", "));
  });

  it("refuses a yaml that does not fit the checkpoint, naming the key, and installs nothing", async () => {
    const before = await readdir(modelsDir);
    await assert.rejects(
      importModel({
        file: join(FIXTURES, "bs_roformer/bs_roformer.ckpt"),
        config: join(FIXTURES, "mel_band_roformer/mel_band_roformer.yaml"),
        modelsDir,
        name: "mismatch",
      }),
      /bs_roformer\.ckpt: .*(does not fit|mismatch|missing|unexpected)/i,
    );
    assert.deepEqual(await readdir(modelsDir), before);
  });
});
