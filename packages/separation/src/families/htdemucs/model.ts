import { resolve } from "node:path";
import { ModelLoadError, openSession, type ExecutionProvider, type InferenceOptions } from "../../inference-options.ts";
import type { RunnableSession } from "../../inference-session.ts";
import type { FamilyModel, FamilyStreamOptions, SeparatedBlock } from "../family.ts";
import type { HtdemucsManifest } from "./manifest.ts";
import { separateHtdemucsStream } from "./separate.ts";
import { HtdemucsSpectrum } from "./spectrum.ts";

const INPUTS = ["mix", "spec"] as const;
const OUTPUTS = ["time", "spec_out"] as const;

/**
 * An HTDemucs model or bag: one onnxruntime session per member, reused for every chunk and every
 * job. With `bagMembers: "in turn"` a bag holds one member's session at a time, opened when that
 * member's pass over the song begins (see separateHtdemucsStream); otherwise every member's is
 * opened at load and kept.
 */
export class HtdemucsModel implements FamilyModel<HtdemucsManifest> {
  readonly manifest: HtdemucsManifest;
  readonly onnxPath: string;
  readonly onnxPaths: string[];
  readonly executionProvider: ExecutionProvider;
  /** whether the members run one after another, each opened for its own pass over the song */
  readonly membersInTurn: boolean;
  fallbackReason?: string;
  readonly #sessions: (RunnableSession | undefined)[];
  readonly #options: InferenceOptions;
  readonly #spectra = new Map<number, Promise<HtdemucsSpectrum>>();
  #released = false;

  private constructor(
    manifest: HtdemucsManifest,
    paths: string[],
    sessions: (RunnableSession | undefined)[],
    options: InferenceOptions,
  ) {
    this.manifest = manifest;
    this.onnxPaths = paths;
    this.onnxPath = paths[0];
    this.#sessions = sessions;
    this.#options = options;
    this.executionProvider = options.executionProvider ?? "cpu";
    this.membersInTurn = options.bagMembers === "in turn" && paths.length > 1;
    sessions.forEach((session, i) => session && checkSession(session, paths[i], manifest, i));
  }

  static async fromManifest(manifest: HtdemucsManifest, baseDir: string, options: InferenceOptions = {}): Promise<HtdemucsModel> {
    const paths = manifest.members.map((m) => resolve(baseDir, m.file));
    // in turn: the first member now (so a file that does not load fails at load), the others when their pass begins
    const opening = options.bagMembers === "in turn" ? paths.slice(0, 1) : paths;
    const sessions: RunnableSession[] = [];
    try {
      for (const path of opening) sessions.push(await openSession(path, options));
      return new HtdemucsModel(manifest, paths, [...sessions, ...paths.slice(sessions.length).map(() => undefined)], options);
    } catch (err) {
      await Promise.all(sessions.map((s) => s.release()));
      throw err;
    }
  }

  /** how many members' sessions are open now */
  get openMembers(): number {
    return this.#sessions.filter((s) => s !== undefined).length;
  }

  /** Member `index`'s session; in turn, opened now and any other member's released first. */
  async #session(index: number): Promise<RunnableSession> {
    const open = this.#sessions[index];
    if (open) return open;
    if (this.#released) throw new ModelLoadError(`${this.onnxPaths[index]}: the model was released`);
    for (let i = 0; i < this.#sessions.length; i++) {
      const other = this.#sessions[i];
      if (other === undefined) continue;
      this.#sessions[i] = undefined;
      await other.release();
    }
    const session = await openSession(this.onnxPaths[index], this.#options);
    try {
      checkSession(session, this.onnxPaths[index], this.manifest, index);
    } catch (err) {
      await session.release();
      throw err;
    }
    this.#sessions[index] = session;
    return session;
  }

  /** the spectrogram packing for member `index`'s segment, made once */
  spectrum(index: number): Promise<HtdemucsSpectrum> {
    let spectrum = this.#spectra.get(index);
    if (!spectrum) {
      spectrum = HtdemucsSpectrum.create(this.manifest.nFft, this.manifest.members[index].segmentSamples);
      this.#spectra.set(index, spectrum);
    }
    return spectrum;
  }

  /**
   * Runs member `index` on `batch` chunks: `mix` [batch, 2, segment], `spec` [batch, 4,
   * nFft/2, frames]; returns `time` [batch, S, 2, segment] and `spec` [batch, S, 4, nFft/2, frames].
   */
  async run(
    index: number,
    mix: Float32Array,
    spec: Float32Array,
    batch: number,
  ): Promise<{ time: Float32Array; spec: Float32Array }> {
    const { manifest } = this;
    const segment = manifest.members[index].segmentSamples;
    const spectrum = await this.spectrum(index);
    const S = manifest.stems.length;
    const specDims = [batch, 4, spectrum.rows, spectrum.frames];
    const session = await this.#session(index);
    const out = await session.runMany(
      { mix: { data: mix, dims: [batch, 2, segment] }, spec: { data: spec, dims: specDims } },
      OUTPUTS,
    );
    const time = out.time;
    const specOut = out.spec_out;
    const expectTime = [batch, S, 2, segment];
    const expectSpec = [batch, S, 4, spectrum.rows, spectrum.frames];
    const same = (a: readonly number[], b: number[]) => a.length === b.length && a.every((v, i) => v === b[i]);
    if (!same(time.dims, expectTime) || !same(specOut.dims, expectSpec))
      throw new ModelLoadError(
        `${this.onnxPaths[index]}: outputs [${time.dims.join(", ")}] and [${specOut.dims.join(", ")}] do not match [${expectTime.join(", ")}] and [${expectSpec.join(", ")}]`,
      );
    return { time: time.data, spec: specOut.data };
  }

  /** One silent chunk through every member (in turn: one after another), so the first job does not pay for onnxruntime's set-up. */
  async prepare(): Promise<void> {
    for (let i = 0; i < this.#sessions.length; i++) {
      const spectrum = await this.spectrum(i);
      const segment = this.manifest.members[i].segmentSamples;
      await this.run(i, new Float32Array(2 * segment), new Float32Array(2 * spectrum.channelSize), 1);
    }
  }

  separate(input: AsyncIterable<Float32Array>, options: FamilyStreamOptions): AsyncGenerator<SeparatedBlock, void, undefined> {
    return separateHtdemucsStream(input, this, options);
  }

  get unusable(): boolean {
    return this.#released || this.#sessions.some((s) => s?.unusable);
  }

  async release(): Promise<void> {
    this.#released = true;
    const open = this.#sessions.filter((s) => s !== undefined);
    this.#sessions.fill(undefined);
    await Promise.all(open.map((s) => s.release()));
  }
}

function checkSession(session: RunnableSession, path: string, manifest: HtdemucsManifest, index: number): void {
  for (const name of INPUTS)
    if (!session.inputNames.includes(name))
      throw new ModelLoadError(`${path}: no input "${name}" (an HTDemucs export takes ${INPUTS.join(" and ")})`);
  for (const name of OUTPUTS)
    if (!session.outputNames.includes(name))
      throw new ModelLoadError(`${path}: no output "${name}" (an HTDemucs export gives ${OUTPUTS.join(" and ")})`);
  const mix = session.inputMetadata.find((m) => m.name === "mix");
  if (mix?.isTensor) {
    const segment = mix.shape[2];
    const expected = manifest.members[index].segmentSamples;
    if (typeof segment === "number" && segment !== expected)
      throw new ModelLoadError(`${path}: input "mix" is ${segment} samples long, the manifest says ${expected}`);
    if (mix.type !== "float32") throw new ModelLoadError(`${path}: input type ${mix.type} is not supported (float32 only)`);
  }
  const time = session.outputMetadata.find((m) => m.name === "time");
  if (time?.isTensor && typeof time.shape[1] === "number" && time.shape[1] !== manifest.stems.length)
    throw new ModelLoadError(`${path}: the model gives ${time.shape[1]} stems, the manifest lists ${manifest.stems.length}`);
}
