import type { ExecutionProvider, InferenceOptions } from "../inference-options.ts";
import type { ManifestBase } from "../manifest.ts";

/** Time spent on the calling thread, accumulated across calls. */
export interface SeparationTimings {
  /** onnxruntime running (session.run calls, from start to result) */
  inferenceMs: number;
  /** the calling thread idle, waiting for onnxruntime */
  waitMs: number;
  /** STFT, iSTFT, overlap-add and stem arithmetic */
  postMs: number;
  chunks: number;
  batches: number;
}

export interface SeparatedBlock {
  frames: number;
  /** stem name → interleaved stereo float32, `frames` long */
  stems: Record<string, Float32Array>;
}

/** What the engine hands a family's stream; everything is already validated. */
export interface FamilyStreamOptions {
  /** the stems to produce: a non-empty subset of the family's outputStems */
  stems: readonly string[];
  /** share of a chunk the next one overlaps, in the family's own sense; the family's default when absent */
  overlap?: number;
  /** chunks per session.run, ≥ 1 (capped by the model's fixed batch, if any) */
  batchSize: number;
  /** accumulated into as the stream runs */
  timings: SeparationTimings;
  signal?: AbortSignal;
  /** `js` forces the TypeScript FFT (for measurements) */
  fft: "auto" | "js";
  /** share the STFT work with a helper thread (the family's default when absent) */
  helperThread?: boolean;
  /**
   * A fresh pass over the same input from its start, when the caller can give one (a file it
   * decodes again). Families that read the input twice (HTDemucs: the song's mean and std
   * first) use it; without it they keep the first pass themselves, in flat memory.
   */
  reopen?: () => AsyncIterable<Float32Array>;
  /**
   * HTDemucs only (separateStream refuses it for other families): demucs's `shifts`, that many
   * runs on the input delayed by a random offset, averaged; the manifest's default when absent.
   */
  shifts?: number;
  /** draws one shift's offset in 0..max, as random.randint(0, max); Math.random's by default (tests fix it) */
  randomShift?: (max: number) => number;
  /**
   * For a family whose stems come after passes that yield nothing (an HTDemucs bag in turn):
   * the share of the whole work done, 0..1, reported as it goes, so that progress moves in those
   * passes too. A family that calls it reports for every pass, its last included.
   */
  onWorkDone?: (fraction: number) => void;
}

/**
 * A loaded model of some family: its session(s) are open and reused for every
 * job. The engine decodes and resamples the input to `manifest.sampleRate`,
 * calls `separate`, and resamples, encodes and reports progress on what it
 * yields; the family owns everything between (chunk geometry, overlap and
 * transition weighting, spectrogram packing, the model's inputs and outputs).
 */
export interface FamilyModel<Manifest extends ManifestBase = ManifestBase> {
  readonly manifest: Manifest;
  /** the model file the session runs (the first, for families with several) */
  readonly onnxPath: string;
  readonly executionProvider: ExecutionProvider;
  /** set by ModelRegistry when the configured provider could not run it and it fell back to cpu */
  fallbackReason?: string;
  /** true once separate can only fail: released, or its inference thread died */
  readonly unusable: boolean;
  /**
   * Runs the model once on silence and starts any helper the family uses, so
   * the first job pays for neither; a provider that loads but cannot run
   * fails here.
   */
  prepare(): Promise<void>;
  /**
   * Interleaved stereo blocks at `manifest.sampleRate` in, separated blocks out:
   * yielded as soon as no later chunk can change them, so memory stays bounded
   * whatever the length, and adding up to exactly the input's frames.
   */
  separate(input: AsyncIterable<Float32Array>, options: FamilyStreamOptions): AsyncGenerator<SeparatedBlock, void, undefined>;
  release(): Promise<void>;
}

/**
 * The manifest side of one model architecture: how its manifest reads and which stems it writes.
 * Declared in the family's `manifest.ts`, which loads no onnxruntime, so the API and the CLI can
 * list and check installed models with it (`families/manifests.ts`).
 */
export interface FamilyDescriptor<Manifest extends ManifestBase> {
  /** the manifest's `architecture` value this family answers to */
  readonly architecture: Manifest["architecture"];
  /** validates a manifest object whose `architecture` is this family's; throws ManifestError naming `source` */
  parseManifest(json: Record<string, unknown>, source: string): Manifest;
  /** the stems a separation can produce, derived ones (mixture − primary) included, in output order */
  outputStems(manifest: Manifest): string[];
  /**
   * Whether `separate` yields as it reads, holding a few chunks: then a second model can run over
   * its output in the same pass (splitStemStream). False for a family that reads the whole input
   * before it yields (HTDemucs: the song's mean and std first).
   */
  readonly readsInputOnce: boolean;
}

/** One model architecture: its descriptor and how its models load. */
export interface SeparationFamily<
  Manifest extends ManifestBase,
  Model extends FamilyModel<Manifest>,
> extends FamilyDescriptor<Manifest> {
  /** opens the model; `baseDir` is the manifest's directory, against which its files resolve */
  load(manifest: Manifest, baseDir: string, options: InferenceOptions): Promise<Model>;
}
