import type { FamilyModel, SeparatedBlock, SeparationTimings } from "./families/family.ts";
import type { SeparationManifest } from "./families/index.ts";
import { separateStream, type SeparateStreamOptions } from "./separate-stream.ts";
import { subtractParts } from "./vocal-split.ts";

/**
 * A second model run over one stem of the first, in the same pass: a vocal separation's whole
 * vocal split into harmony and reverb, the lead being what they leave of it.
 */
export interface StemSplit {
  /** the loaded model that splits the stem */
  model: FamilyModel<SeparationManifest>;
  /** the first pass's stem it splits (it stays in the output as it is) */
  of: string;
  /** the split model's stems to keep */
  stems: string[];
  /**
   * written as `of − stems…`, so the parts add up to the stem exactly: the network's masks reach
   * neither the bins above its dimF nor the lowest three, and its own output would lose them
   */
  remainder: string;
}

/** A block's stems from `at`, `frames` long (views, not copies, when one block holds them all). */
function takeFrames(pending: SeparatedBlock[], frames: number, at: number): { stems: Record<string, Float32Array>; at: number } {
  const first = pending[0]!;
  if (first.frames - at >= frames) {
    const stems = Object.fromEntries(
      Object.entries(first.stems).map(([name, samples]) => [name, samples.subarray(2 * at, 2 * (at + frames))]),
    );
    at += frames;
    if (at === first.frames) {
      pending.shift();
      at = 0;
    }
    return { stems, at };
  }
  const stems = Object.fromEntries(Object.keys(first.stems).map((name) => [name, new Float32Array(2 * frames)]));
  let filled = 0;
  while (filled < frames) {
    const block = pending[0];
    if (!block) throw new Error("the split model gave more frames than its input");
    const n = Math.min(frames - filled, block.frames - at);
    for (const [name, samples] of Object.entries(block.stems))
      stems[name]!.set(samples.subarray(2 * at, 2 * (at + n)), 2 * filled);
    filled += n;
    at += n;
    if (at === block.frames) {
      pending.shift();
      at = 0;
    }
  }
  return { stems, at };
}

/**
 * Runs `split.model` over the `split.of` stem of a separated stream as that stream yields it, and
 * yields blocks with the first pass's stems, the split's and the remainder, frame-aligned. Only
 * the first pass's blocks the split model has not yet given back are held (about one of its
 * chunks), so memory stays flat in the input's length, and nothing is written to disk and read
 * back between the two models. The split's frames are the first pass's, block for block, exactly
 * as a separate run over the stem would give them (the families chunk by frame position, not by
 * block), so the result is the same as splitting the first pass's float output afterwards.
 */
export async function* splitStemStream(
  first: AsyncIterable<SeparatedBlock>,
  split: StemSplit,
  options: Pick<SeparateStreamOptions, "onProgress" | "totalFrames" | "signal" | "helperThread" | "batchSize"> & {
    timings: SeparationTimings;
  },
): AsyncGenerator<SeparatedBlock, void, undefined> {
  const pending: SeparatedBlock[] = [];
  let inFirst = 0;
  let fed = 0;
  async function* feed(): AsyncGenerator<Float32Array> {
    for await (const block of first) {
      const stem = block.stems[split.of];
      if (!stem) throw new Error(`the first pass gave no "${split.of}" stem to split`);
      if (block.frames === 0) continue;
      pending.push(block);
      fed += block.frames;
      yield stem;
    }
  }
  let given = 0;
  for await (const part of separateStream(feed(), split.model, { ...options, stems: split.stems })) {
    const taken = takeFrames(pending, part.frames, inFirst);
    inFirst = taken.at;
    given += part.frames;
    const remainder = Float32Array.from(taken.stems[split.of]!);
    subtractParts(
      remainder,
      split.stems.map((name) => part.stems[name]!),
    );
    yield { frames: part.frames, stems: { ...taken.stems, ...part.stems, [split.remainder]: remainder } };
  }
  if (given !== fed) throw new Error(`the split model gave ${given} frames for ${fed}`);
}
