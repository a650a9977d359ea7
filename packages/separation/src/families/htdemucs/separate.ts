import { mkdtemp, open, rm, type FileHandle } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BACKING_STEM } from "../../manifest.ts";
import type { FamilyStreamOptions, SeparatedBlock } from "../family.ts";
import { ChunkPlan, HTDEMUCS_DEFAULT_OVERLAP } from "./chunking.ts";
import type { HtdemucsModel } from "./model.ts";
import { HtdemucsSpectrum } from "./spectrum.ts";
import { spooledInput } from "./spool.ts";

/**
 * A window over an unbounded signal of `channels` channels: samples from `start` (absolute)
 * are kept, earlier ones dropped, so memory follows the window, not the song.
 */
class Window {
  readonly channels: Float64Array[];
  start = 0;
  end = 0;

  constructor(channels: number, capacity: number) {
    this.channels = Array.from({ length: channels }, () => new Float64Array(capacity));
  }

  /** makes room up to absolute sample `end`, zero-filled */
  extend(end: number): void {
    if (end <= this.end) return;
    const need = end - this.start;
    if (need > this.channels[0].length) {
      const size = Math.max(need, 2 * this.channels[0].length);
      for (let c = 0; c < this.channels.length; c++) {
        const grown = new Float64Array(size);
        grown.set(this.channels[c].subarray(0, this.end - this.start));
        this.channels[c] = grown;
      }
    }
    for (const ch of this.channels) ch.fill(0, this.end - this.start, need);
    this.end = end;
  }

  /** forgets samples before absolute `start` */
  drop(start: number): void {
    if (start <= this.start) return;
    const shift = Math.min(start, this.end) - this.start;
    for (const ch of this.channels) ch.copyWithin(0, shift, this.end - this.start);
    this.start += shift;
  }
}

/** The song's length and the mean and unbiased std of its mono mix (demucs's `ref`). */
interface SongStats {
  frames: number;
  mean: number;
  std: number;
}

async function songStats(input: AsyncIterable<Float32Array>, signal?: AbortSignal): Promise<SongStats> {
  let n = 0;
  let sum = 0;
  let sumSquares = 0;
  // shifted by the first sample so the sums do not cancel for a song far from zero mean
  let shift: number | undefined;
  for await (const block of input) {
    signal?.throwIfAborted();
    for (let i = 0; i + 1 < block.length; i += 2) {
      const mono = Math.fround((block[i] + block[i + 1]) / 2);
      shift ??= mono;
      const d = mono - shift;
      sum += d;
      sumSquares += d * d;
      n++;
    }
  }
  if (n === 0) return { frames: 0, mean: 0, std: 0 };
  const mean = (shift ?? 0) + sum / n;
  const variance = n > 1 ? Math.max(0, (sumSquares - (sum * sum) / n) / (n - 1)) : Number.NaN;
  return { frames: n, mean, std: Math.sqrt(variance) };
}

/** demucs.apply.apply_model's `max_shift = int(0.5 * model.samplerate)`: a shift's offsets are 0..this. */
export function htdemucsMaxShift(sampleRate: number): number {
  return Math.trunc(0.5 * sampleRate);
}

/** random.randint(0, max): each integer in 0..max alike */
const randomShift = (max: number) => Math.floor(Math.random() * (max + 1));

/**
 * One pass of a bag member over the song, shifted: its chunk schedule and its overlap-added,
 * weight-summed output. demucs runs a shift on `delay` zeros followed by the song (the song
 * padded by max_shift each side, read from `offset`, delay = max_shift − offset) and drops the
 * first `delay` output samples, so the plan and the window are in that shifted signal's
 * samples; without shifts there is one run, delay 0.
 */
interface Run {
  delay: number;
  plan: ChunkPlan;
  next: number;
  /** S·2 stem channels, then the summed transition weight */
  acc: Window;
}

/** One bag member: its spectrum helper and its runs, one per shift (whose outputs it averages). */
interface MemberState {
  index: number;
  spectrum: HtdemucsSpectrum;
  runs: Run[];
}

/**
 * demucs's inference as its CLI runs it: the song normalised by its mono mix's mean and std,
 * then `apply_model(model, mix, shifts, split=True, overlap, transition_power=1)` for each
 * bag member, the members weighted per source, and the normalisation undone. With shifts, each
 * member's shifted runs go side by side over the same input pass (they lag one another by at
 * most max_shift samples), so a shift costs its chunks, not another read of the input.
 *
 * A first pass over the input gives the statistics (and the length, which fixes how the last
 * chunks are padded); then the members separate, all side by side in a second pass, or, when the
 * model runs its members in turn, each in a pass of its own, adding its weighted output to what
 * the members before it gave (kept in a temporary file), in the same order and float32 steps, so
 * the same bytes come out. A pass after the first reads the input again with `options.reopen`
 * when the engine can, else from a temporary file the first pass spooled it to. Only a few
 * segments of input and output are held in memory.
 */
export async function* separateHtdemucsStream(
  input: AsyncIterable<Float32Array>,
  model: HtdemucsModel,
  options: FamilyStreamOptions,
): AsyncGenerator<SeparatedBlock, void, undefined> {
  const { manifest } = model;
  const { signal } = options;

  let passAgain: () => AsyncIterable<Float32Array>;
  let stats: SongStats;
  let cleanup = async () => {};
  if (options.reopen) {
    stats = await songStats(input, signal);
    passAgain = options.reopen;
  } else {
    const spool = await spooledInput(input, (pass) => songStats(pass, signal));
    stats = spool.result;
    passAgain = spool.replay;
    cleanup = spool.dispose;
  }
  try {
    if (stats.frames === 0) return;
    const shifts = options.shifts ?? manifest.shifts ?? 0;
    const maxShift = htdemucsMaxShift(manifest.sampleRate);
    const draw = options.randomShift ?? randomShift;
    // drawn member by member, as demucs's BagOfModels branch calls apply_model per member
    const delays = manifest.members.map(() =>
      shifts === 0
        ? [0]
        : Array.from({ length: shifts }, () => {
            const offset = draw(maxShift);
            if (!Number.isInteger(offset) || offset < 0 || offset > maxShift)
              throw new RangeError(`a shift's offset must be an integer in 0..${maxShift}, got ${offset}`);
            return maxShift - offset;
          }),
    );
    const song = { ...stats, delays };
    const every = manifest.members.map((_, index) => index);
    if (!model.membersInTurn) {
      yield* memberPass(model, options, song, every, passAgain());
      return;
    }
    const dir = await mkdtemp(join(tmpdir(), "mixdown-htdemucs-bag-"));
    try {
      let before: PartialSums | undefined;
      for (const index of every) {
        if (index === every.length - 1) {
          yield* memberPass(model, options, song, [index], passAgain(), { before, pass: [index, every.length] });
          break;
        }
        const into = await PartialSums.create(join(dir, `members-0-${index}.f32`), touchedStems(manifest.weights, index));
        try {
          for await (const _ of memberPass(model, options, song, [index], passAgain(), {
            before,
            into,
            pass: [index, every.length],
          }));
        } finally {
          await into.close();
          await before?.remove();
        }
        before = into;
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  } finally {
    await cleanup();
  }
}

/** The song's statistics and each member's shift delays, fixed before the first member runs. */
interface Song extends SongStats {
  delays: number[][];
}

/** the stems that members 0..last weight: the ones their partial sums hold */
function touchedStems(weights: number[][], last: number): number[] {
  return weights[0].map((_, s) => s).filter((s) => weights.slice(0, last + 1).some((row) => row[s] !== 0));
}

/**
 * What the members before this one gave: for each stem they weight, Σ w·out over them, in the
 * float32 steps the side-by-side sum takes, frame by frame (each frame its stems' stereo pairs).
 */
class PartialSums {
  readonly path: string;
  readonly stems: number[];
  #file: FileHandle;

  private constructor(path: string, stems: number[], file: FileHandle) {
    this.path = path;
    this.stems = stems;
    this.#file = file;
  }

  static async create(path: string, stems: number[]): Promise<PartialSums> {
    return new PartialSums(path, stems, await open(path, "w"));
  }

  /** appends `frames` frames of each of this file's stems, from `sums` (stem index → interleaved stereo) */
  async write(sums: Float32Array[], frames: number): Promise<void> {
    const T = this.stems.length;
    const out = new Float32Array(frames * T * 2);
    this.stems.forEach((s, t) => {
      const sum = sums[s];
      for (let i = 0; i < frames; i++) {
        out[(i * T + t) * 2] = sum[2 * i];
        out[(i * T + t) * 2 + 1] = sum[2 * i + 1];
      }
    });
    await this.#file.writeFile(new Uint8Array(out.buffer));
  }

  async close(): Promise<void> {
    await this.#file.close();
  }

  /** a reader of the file from its start, once it is written */
  async reader(): Promise<{ read: (frames: number) => Promise<Map<number, Float32Array>>; close: () => Promise<void> }> {
    const file = await open(this.path, "r");
    const T = this.stems.length;
    return {
      read: async (frames) => {
        const data = new Float32Array(frames * T * 2);
        const bytes = new Uint8Array(data.buffer);
        let got = 0;
        while (got < bytes.length) {
          const { bytesRead } = await file.read(bytes, got, bytes.length - got, null);
          if (bytesRead === 0) throw new Error(`${this.path} ended ${bytes.length - got} bytes early`);
          got += bytesRead;
        }
        const sums = new Map<number, Float32Array>();
        this.stems.forEach((s, t) => {
          const sum = new Float32Array(frames * 2);
          for (let i = 0; i < frames; i++) {
            sum[2 * i] = data[(i * T + t) * 2];
            sum[2 * i + 1] = data[(i * T + t) * 2 + 1];
          }
          sums.set(s, sum);
        });
        return sums;
      },
      close: () => file.close(),
    };
  }

  remove(): Promise<void> {
    return rm(this.path, { force: true });
  }
}

/**
 * One pass over the input by `memberIndices` side by side. Without `into` it yields the song's
 * stems: Σ w·out over these members, added to `before`'s sums, then / Σ w and the normalisation
 * undone; with `into` it writes the sums there and yields nothing. `pass` (this pass's index and
 * the number of passes) has it report the share of the work done through `onWorkDone`.
 */
async function* memberPass(
  model: HtdemucsModel,
  options: FamilyStreamOptions,
  song: Song,
  memberIndices: number[],
  source: AsyncIterable<Float32Array>,
  partial: { before?: PartialSums; into?: PartialSums; pass?: [index: number, of: number] } = {},
): AsyncGenerator<SeparatedBlock, void, undefined> {
  const { manifest } = model;
  const { signal, timings } = options;
  const overlap = options.overlap ?? HTDEMUCS_DEFAULT_OVERLAP;
  const stems = manifest.stems;
  const S = stems.length;
  const total = song.frames;
  const scale = Math.fround(Math.fround(song.std) + 1e-8);
  const mean = Math.fround(song.mean);
  const normalise = (v: number) => Math.fround(Math.fround(v - mean) / scale);
  const before = await partial.before?.reader();
  try {
    const members: MemberState[] = await Promise.all(
      memberIndices.map(async (index) => ({
        index,
        spectrum: await model.spectrum(index),
        runs: song.delays[index].map((delay): Run => ({
          delay,
          plan: new ChunkPlan(manifest.members[index].segmentSamples, overlap, delay + total),
          next: 0,
          acc: new Window(2 * S + 1, manifest.members[index].segmentSamples * 2),
        })),
      })),
    );
    const runs = members.flatMap((m) => m.runs);
    const maxSegment = Math.max(...memberIndices.map((index) => manifest.members[index].segmentSamples));
    const mixture = new Window(2, 2 * maxSegment);
    const weights = manifest.weights;
    const totals = stems.map((_, k) => weights.reduce((sum, row) => sum + row[k], 0));
    const wantBacking = options.stems.includes(BACKING_STEM);
    const vocals = stems.indexOf("vocals");
    let emitted = 0;

    /** a run's chunk k can run once the song is read up to its input's end */
    const ready = (r: Run, available: number) => r.next < r.plan.count && r.plan.inputEnd(r.next) - r.delay <= available;

    // the chunks of all of a member's shifts share its batches: one session, one segment
    const runReady = async (m: MemberState, available: number) => {
      for (;;) {
        const batch: [Run, number][] = [];
        for (const r of m.runs) while (batch.length < options.batchSize && ready(r, available)) batch.push([r, r.next++]);
        if (batch.length === 0) return;
        signal?.throwIfAborted();
        await runBatch(m, batch);
      }
    };

    const runBatch = async (m: MemberState, chunks: [Run, number][]) => {
      const { spectrum } = m;
      const L = manifest.members[m.index].segmentSamples;
      const B = chunks.length;
      const t0 = performance.now();
      const mix = new Float32Array(B * 2 * L);
      const spec = new Float32Array(B * 2 * spectrum.channelSize);
      const channel = new Float32Array(L);
      chunks.forEach(([{ plan, delay }, k], b) => {
        // in the song's samples: the shift's leading zeros are before 0
        const start = plan.inputStart(k) - delay;
        for (let c = 0; c < 2; c++) {
          const src = mixture.channels[c];
          for (let i = 0; i < L; i++) {
            const p = start + i;
            channel[i] = p >= 0 && p < total ? normalise(src[p - mixture.start]) : 0;
          }
          mix.set(channel, (b * 2 + c) * L);
          spectrum.analyze(channel, spec, (b * 2 + c) * spectrum.channelSize);
        }
      });
      const t1 = performance.now();
      const { time, spec: specOut } = await model.run(m.index, mix, spec, B);
      const t2 = performance.now();
      chunks.forEach(([{ plan, acc: window }, k], b) => {
        const offset = plan.offset(k);
        const length = plan.length(k);
        const trim = plan.trim(k);
        window.extend(offset + length);
        const base = offset - window.start;
        const weightSum = window.channels[2 * S];
        for (let i = 0; i < length; i++) weightSum[base + i] += plan.weight[i];
        for (let s = 0; s < S; s++) {
          for (let c = 0; c < 2; c++) {
            const plane = (b * S + s) * 2 + c;
            const wave = spectrum.synthesize(specOut, plane * spectrum.channelSize);
            const timeOffset = plane * L;
            const acc = window.channels[s * 2 + c];
            for (let i = 0; i < length; i++) {
              const j = trim + i;
              acc[base + i] += plan.weight[i] * Math.fround(time[timeOffset + j] + wave[j]);
            }
          }
        }
      });
      timings.chunks += B;
      timings.batches += 1;
      timings.inferenceMs += t2 - t1;
      timings.waitMs += t2 - t1;
      timings.postMs += t1 - t0 + (performance.now() - t2);
    };

    /** song samples every run has finished: no chunk still to run writes before them */
    const finished = () => Math.min(...runs.map((r) => (r.next < r.plan.count ? r.plan.offset(r.next) - r.delay : total)));

    async function* emit(upTo: number): AsyncGenerator<SeparatedBlock> {
      if (upTo <= emitted) return;
      const frames = upTo - emitted;
      const out: Record<string, Float32Array> = {};
      const sources: Float32Array[] = [];
      const earlier = await before?.read(frames);
      for (let s = 0; s < S; s++) {
        const inter = earlier?.get(s) ?? new Float32Array(frames * 2);
        for (const m of members) {
          // the member's output is the mean of its shifts' (`out /= shifts`)
          const w = weights[m.index][s] / m.runs.length;
          if (w === 0) continue;
          for (const r of m.runs) {
            const base = emitted + r.delay - r.acc.start;
            const weightSum = r.acc.channels[2 * S];
            for (let c = 0; c < 2; c++) {
              const acc = r.acc.channels[s * 2 + c];
              for (let i = 0; i < frames; i++) inter[2 * i + c] += (w * acc[base + i]) / weightSum[base + i];
            }
          }
        }
        sources.push(inter);
      }
      if (partial.into) {
        await partial.into.write(sources, frames);
        advance(upTo);
        return;
      }
      for (let s = 0; s < S; s++) {
        const inter = sources[s];
        for (let i = 0; i < inter.length; i++) inter[i] = (inter[i] / totals[s]) * scale + mean;
        if (options.stems.includes(stems[s])) out[stems[s]] = inter;
      }
      if (wantBacking) {
        const backing = new Float32Array(frames * 2);
        const v = sources[vocals];
        const base = emitted - mixture.start;
        for (let i = 0; i < frames; i++) {
          backing[2 * i] = mixture.channels[0][base + i] - v[2 * i];
          backing[2 * i + 1] = mixture.channels[1][base + i] - v[2 * i + 1];
        }
        out[BACKING_STEM] = backing;
      }
      advance(upTo);
      yield { frames, stems: out };
    }

    /** forgets what no later block needs */
    function advance(upTo: number): void {
      emitted = upTo;
      if (partial.pass) options.onWorkDone?.((partial.pass[0] + emitted / total) / partial.pass[1]);
      for (const r of runs) r.acc.drop(emitted + r.delay);
      const keep = Math.min(emitted, ...runs.map((r) => (r.next < r.plan.count ? r.plan.inputStart(r.next) - r.delay : total)));
      mixture.drop(Math.max(0, keep));
    }

    let read = 0;
    const feed = async function* () {
      for await (const block of source) {
        const frames = Math.floor(block.length / 2);
        const take = Math.min(frames, total - read);
        if (take <= 0) continue;
        mixture.extend(read + take);
        const base = read - mixture.start;
        const [left, right] = mixture.channels;
        for (let i = 0; i < take; i++) {
          left[base + i] = block[2 * i];
          right[base + i] = block[2 * i + 1];
        }
        read += take;
        yield read;
      }
    };
    for await (const available of feed()) {
      for (const m of members) await runReady(m, available);
      yield* emit(finished());
    }
    if (read !== total) throw new Error(`the input's second pass gave ${read} frames, the first ${total}`);
    for (const m of members) await runReady(m, total);
    yield* emit(total);
  } finally {
    await before?.close();
  }
}
