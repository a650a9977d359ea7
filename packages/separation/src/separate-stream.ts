import type { FamilyModel, SeparatedBlock, SeparationTimings } from "./families/family.ts";
import { outputStemNames, type SeparationManifest } from "./families/index.ts";
import { MDX_DEFAULT_OVERLAP } from "./families/mdx/chunking.ts";

export type { SeparatedBlock, SeparationTimings } from "./families/family.ts";

/**
 * Share of each chunk's kept part that the next chunk overlaps, for MDX-Net
 * models (python-audio-separator's default); other families have their own.
 */
export const DEFAULT_OVERLAP = MDX_DEFAULT_OVERLAP;
/** Chunks per session.run; see the README for the measurement behind it. */
export const DEFAULT_BATCH_SIZE = 1;

export interface SeparationProgress {
  /** mixture frames (at the model rate) whose stems are final */
  processedFrames: number;
  /** when the caller passed totalFrames */
  totalFrames?: number;
  /** processedFrames / totalFrames, capped at 1 */
  fraction?: number;
}

export function emptyTimings(): SeparationTimings {
  return { inferenceMs: 0, waitMs: 0, postMs: 0, chunks: 0, batches: 0 };
}

export interface SeparateStreamOptions {
  /** 0 ≤ overlap < 1; default: the family's (DEFAULT_OVERLAP for MDX-Net) */
  overlap?: number;
  /** chunks per session.run (capped by the model's fixed batch, if any) */
  batchSize?: number;
  /** a subset of `outputStemNames(manifest)`; default all */
  stems?: string[];
  /** mixture length at the model rate, for progress fractions */
  totalFrames?: number;
  onProgress?: (progress: SeparationProgress) => void;
  /** accumulates inference / post-processing time */
  timings?: SeparationTimings;
  signal?: AbortSignal;
  /** `js` forces the TypeScript FFT (for measurements); default: fastest available */
  fft?: "auto" | "js";
  /** share the STFT work with a helper thread (default: when the machine has 2+ cores) */
  helperThread?: boolean;
  /** a fresh pass over the same input, for families that read it twice (see FamilyStreamOptions) */
  reopen?: () => AsyncIterable<Float32Array>;
  /**
   * HTDemucs only: demucs's `shifts` (its CLI's default is 1), an integer ≥ 0; each shift runs
   * the model again on the input delayed by a random 0–0.5 s and the runs are averaged, so the
   * output is random when > 0. Default: the manifest's `shifts`, else 0.
   */
  shifts?: number;
  /** draws a shift's offset in 0..max (random.randint(0, max)); default Math.random's, fixed by tests */
  randomShift?: (max: number) => number;
}

/** Resolves the stems to produce, rejecting names the model cannot give. */
export function selectStems(manifest: SeparationManifest, requested?: string[]): string[] {
  const available = outputStemNames(manifest);
  if (!requested) return available;
  for (const name of requested) {
    if (!available.includes(name))
      throw new RangeError(`model "${manifest.name}" has no stem "${name}" (it gives ${available.join(", ")})`);
  }
  return available.filter((name) => requested.includes(name));
}

/**
 * Separates a stream of interleaved stereo blocks at the model's rate into
 * stems. The model's family does the chunking, the model runs and the
 * overlap-add; this validates the options and reports progress on the blocks
 * it yields, which add up to exactly the input's frames.
 */
export async function* separateStream(
  input: AsyncIterable<Float32Array>,
  model: FamilyModel<SeparationManifest>,
  options: SeparateStreamOptions = {},
): AsyncGenerator<SeparatedBlock, void, undefined> {
  const { overlap, onProgress, totalFrames, signal } = options;
  if (overlap !== undefined && !(overlap >= 0 && overlap < 1)) throw new RangeError(`overlap must be in [0, 1), got ${overlap}`);
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError(`invalid batchSize ${batchSize}`);
  const { shifts } = options;
  if (shifts !== undefined && !(Number.isInteger(shifts) && shifts >= 0))
    throw new RangeError(`shifts must be an integer ≥ 0, got ${shifts}`);
  if (shifts && model.manifest.architecture !== "htdemucs")
    throw new RangeError(`shifts is an HTDemucs option; model "${model.manifest.name}" is ${model.manifest.architecture}`);
  const stems = selectStems(model.manifest, options.stems);

  let processed = 0;
  // set once the family reports its work itself: its fraction, not the frames yielded, is the progress
  let workDone: number | undefined;
  const progress = (fraction: number | undefined): SeparationProgress => ({
    processedFrames: processed,
    ...(totalFrames !== undefined && totalFrames > 0 ? { totalFrames } : {}),
    ...(fraction !== undefined ? { fraction: Math.min(1, fraction) } : {}),
  });
  for await (const block of model.separate(input, {
    stems,
    batchSize,
    timings: options.timings ?? emptyTimings(),
    fft: options.fft ?? "auto",
    ...(overlap !== undefined ? { overlap } : {}),
    ...(options.helperThread !== undefined ? { helperThread: options.helperThread } : {}),
    ...(signal ? { signal } : {}),
    ...(options.reopen ? { reopen: options.reopen } : {}),
    ...(shifts !== undefined ? { shifts } : {}),
    ...(options.randomShift ? { randomShift: options.randomShift } : {}),
    ...(onProgress
      ? {
          onWorkDone: (fraction: number) => {
            workDone = fraction;
            onProgress(progress(fraction));
          },
        }
      : {}),
  })) {
    processed += block.frames;
    if (onProgress && workDone === undefined)
      onProgress(progress(totalFrames !== undefined && totalFrames > 0 ? processed / totalFrames : undefined));
    yield block;
  }
  // totalFrames may have been an estimate (lossy containers): end on exactly 1
  if (onProgress && processed > 0 && totalFrames !== undefined && totalFrames !== processed)
    onProgress({ processedFrames: processed, totalFrames: processed, fraction: 1 });
}
