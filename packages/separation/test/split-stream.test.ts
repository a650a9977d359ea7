import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ModelRegistry, separateFile, type SeparatedBlock } from "../src/index.ts";
import { splitStemStream } from "../src/split-stream.ts";
import { writeRemainder } from "../src/vocal-split.ts";
import { writeTestModel, SMALL } from "./support/mdx-test-models.ts";
import { faded, tones, withTempDir, writeStereo } from "./support/signals.ts";

// The shipped models: the vocal separation's first model and the split of its whole vocal.
const shipped = fileURLToPath(new URL("../../../models/", import.meta.url));

/** A song-like input: tones that come and go, so each chunk of both models differs. */
function song(frames: number, rate: number) {
  const part = (seed: number) => {
    const x = tones(frames, rate, [
      { freq: 220 * seed, amp: 0.2 },
      { freq: 330 * seed + 7, amp: 0.15, phase: seed },
      { freq: 2500 + 100 * seed, amp: 0.05 },
    ]);
    for (let i = 0; i < frames; i++) x[i]! *= 0.6 + 0.4 * Math.sin((2 * Math.PI * i) / (rate * (1.3 + seed)));
    return faded(x, 2048);
  };
  return { left: part(1), right: part(2) };
}

describe("a second model over one stem in the same pass (splitStemStream)", () => {
  let registry: ModelRegistry;
  before(() => {
    registry = new ModelRegistry({ modelsDir: shipped, intraOpThreads: 1 });
  });
  after(async () => {
    await registry.close();
  });

  it("writes the same bytes as splitting the first pass's float WAV afterwards and writing the lead as its remainder", async () => {
    await withTempDir(async (dir) => {
      const [vocals, vocalsplit] = [await registry.load("vocals"), await registry.load("vocalsplit")];
      const inputPath = join(dir, "song.wav");
      // 14 s: two and a half of the models' 262,144-frame chunks, seams and a short last chunk included
      await writeStereo(inputPath, song(14 * 44100 + 321, 44100), 44100);
      const outputs = [{ format: "wav" as const, sampleFormat: "f32" as const }];

      // the two passes one after the other, as a vocal separation with an ensemble runs them
      const first = await separateFile({ inputPath, model: vocals, outDir: join(dir, "first"), outputs });
      const parts = await separateFile({
        inputPath: first.stems.vocals!.wav!,
        model: vocalsplit,
        outDir: join(dir, "parts"),
        outputs,
        stems: ["harmony", "reverb"],
      });
      const lead = join(dir, "parts", "lead.wav");
      await writeRemainder(
        first.stems.vocals!.wav!,
        [parts.stems.harmony!.wav!, parts.stems.reverb!.wav!],
        [{ format: "wav", sampleFormat: "f32", path: lead }],
        new AbortController().signal,
      );

      const fractions: number[] = [];
      const chained = await separateFile({
        inputPath,
        model: vocals,
        outDir: join(dir, "chained"),
        outputs,
        split: { model: vocalsplit, of: "vocals", stems: ["harmony", "reverb"], remainder: "lead" },
        onProgress: (p) => fractions.push(p.fraction!),
      });
      assert.deepEqual(Object.keys(chained.stems), ["vocals", "backing", "harmony", "reverb", "lead"]);
      const twoStep: Record<string, string> = {
        vocals: first.stems.vocals!.wav!,
        backing: first.stems.backing!.wav!,
        harmony: parts.stems.harmony!.wav!,
        reverb: parts.stems.reverb!.wav!,
        lead,
      };
      for (const [stem, path] of Object.entries(twoStep)) {
        const [want, got] = await Promise.all([readFile(path), readFile(chained.stems[stem]!.wav!)]);
        assert.ok(want.equals(got), `${stem}: the same bytes both ways`);
      }
      assert.equal(chained.frames, first.frames);
      assert.ok(chained.timings.split!.inferenceMs > 0, "the split's inference is timed apart");
      assert.ok(fractions.length > 1 && fractions.every((f, i) => i === 0 || f >= fractions[i - 1]!));
      assert.equal(fractions.at(-1), 1);
    });
  });

  it("refuses a split of a stem it does not write, one of another rate, or one that would write a stem twice", async () => {
    await withTempDir(async (dir) => {
      const vocals = await registry.load("vocals");
      const vocalsplit = await registry.load("vocalsplit");
      const inputPath = join(dir, "in.wav");
      await writeStereo(inputPath, song(44100, 44100), 44100);
      const run = (split: Parameters<typeof separateFile>[0]["split"], stems?: string[]) =>
        separateFile({ inputPath, model: vocals, outDir: join(dir, "out"), ...(stems ? { stems } : {}), split: split! });
      await assert.rejects(
        run({ model: vocalsplit, of: "vocals", stems: ["harmony"], remainder: "lead" }, ["backing"]),
        /"vocals" is not among the stems written/,
      );
      await assert.rejects(
        run({ model: vocalsplit, of: "vocals", stems: ["harmony"], remainder: "backing" }),
        /writes a stem twice/,
      );
      await assert.rejects(run({ model: vocalsplit, of: "vocals", stems: ["choir"], remainder: "lead" }), /no stem "choir"/);
      const other = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1 });
      try {
        await writeTestModel(dir, {
          ...SMALL,
          name: "small",
          stems: [
            { name: "harmony", gain: 0.5 },
            { name: "reverb", gain: 0.25 },
          ],
        });
        await assert.rejects(
          run({ model: await other.load("small"), of: "vocals", stems: ["harmony"], remainder: "lead" }),
          /runs at \d+ Hz, the first at 44100 Hz/,
        );
      } finally {
        await other.close();
      }
    });
  });

  it("holds only the first pass's blocks the split has not given back, whatever the length", async () => {
    const splitModel = await registry.load("vocalsplit");
    const frames = 44100 * 40;
    let held = 0;
    let mostHeld = 0;
    let pulled = 0;
    async function* first(): AsyncGenerator<SeparatedBlock> {
      for (let at = 0; at < frames; at += 4096) {
        const n = Math.min(4096, frames - at);
        const vocals = new Float32Array(2 * n);
        for (let i = 0; i < vocals.length; i++) vocals[i] = 0.1 * Math.sin((at * 2 + i) * 0.01);
        held += n;
        pulled += n;
        mostHeld = Math.max(mostHeld, held);
        yield { frames: n, stems: { vocals, backing: new Float32Array(vocals) } };
      }
    }
    let given = 0;
    for await (const block of splitStemStream(
      first(),
      { model: splitModel, of: "vocals", stems: ["harmony", "reverb"], remainder: "lead" },
      { timings: { inferenceMs: 0, waitMs: 0, postMs: 0, chunks: 0, batches: 0 } },
    )) {
      given += block.frames;
      held = pulled - given;
      for (let i = 0; i < block.stems.lead!.length; i += 997)
        assert.equal(
          block.stems.lead![i],
          Math.fround(Math.fround(block.stems.vocals![i]! - block.stems.harmony![i]!) - block.stems.reverb![i]!),
        );
    }
    assert.equal(given, frames);
    // one 262,144-frame chunk of the split model and its overlap, not the 1.76 M frames of the input
    assert.ok(mostHeld < 3 * 262_144, `held at most ${mostHeld} frames`);
  });
});
