import { copyFile, mkdir, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, extname, join } from "node:path";
import { parseManifest } from "../families/index.ts";
import { ModelRegistry } from "../model-registry.ts";
import { separateStream } from "../separate-stream.ts";
import { identifyModelFile, ImportProblem, type IdentifiedModel, type IdentifyOptions } from "./identify.ts";
import { ensurePyTorch } from "@mixdown/python";
import { runExporter } from "./python-runtime.ts";

/**
 * `models import`: one model file a user owns becomes an installed model:
 * identified, converted to ONNX once where it is a PyTorch checkpoint,
 * given its manifest, and run on a few seconds of audio before it is moved
 * into the models directory, so what is installed is known to run.
 */
export interface ImportModelOptions extends IdentifyOptions {
  file: string;
  modelsDir: string;
  /** default: the file's base name */
  name?: string;
  /** replace an installed model of that name */
  force?: boolean;
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}

export interface ImportedModel {
  name: string;
  family: string;
  description: string;
  manifestPath: string;
  /** every file written into the models directory */
  files: string[];
  stems: string[];
  /** the check run: seconds of audio separated and how many times faster than realtime */
  check: { seconds: number; realtime: number };
}

/** What an installed model may be named: its name is also its files' names in the models folder. */
export const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
const CHECK_SECONDS = 4;

export function defaultModelName(file: string): string {
  return (
    basename(file, extname(file))
      .replace(/[^A-Za-z0-9_.-]+/g, "_")
      .replace(/^[^A-Za-z0-9]+/, "") || "model"
  );
}

export async function importModel(options: ImportModelOptions): Promise<ImportedModel> {
  const log = options.log ?? (() => {});
  const identified = await identifyModelFile(options.file, options);
  log(`${options.file}: ${identified.description}`);
  const name = options.name ?? defaultModelName(options.file);
  if (!MODEL_NAME.test(name)) throw new ImportProblem(`--name ${JSON.stringify(name)}: use letters, digits, ".", "_" or "-"`);
  await mkdir(options.modelsDir, { recursive: true });
  const manifestPath = join(options.modelsDir, `${name}.json`);
  if (!options.force && (await stat(manifestPath).catch(() => undefined)))
    throw new ImportProblem(
      `a model named "${name}" is installed already (${manifestPath}): choose another --name, or --force to replace it`,
    );

  const staging = join(options.modelsDir, `.import-${name}-${process.pid}`);
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging);
  try {
    const manifest = await convert(identified, name, staging, log, options.env);
    manifest.name = name;
    const parsed = parseManifest(manifest, `${name}.json (made by the ${identified.family} importer)`);
    await writeFile(join(staging, `${name}.json`), `${JSON.stringify(manifest, null, 2)}\n`);
    log(`checking it on ${CHECK_SECONDS} s of audio`);
    const check = await checkRuns(staging, name, parsed.sampleRate);
    const files: string[] = [];
    for (const file of await readdir(staging)) {
      await rename(join(staging, file), join(options.modelsDir, file));
      files.push(join(options.modelsDir, file));
    }
    return {
      name,
      family: parsed.architecture,
      description: identified.description,
      manifestPath,
      files,
      stems: check.stems,
      check: { seconds: CHECK_SECONDS, realtime: check.realtime },
    };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

async function convert(
  identified: IdentifiedModel,
  name: string,
  outDir: string,
  log: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Record<string, unknown>> {
  if (identified.family === "mdx") {
    const g = identified.mdx!;
    await copyFile(identified.checkpoint, join(outDir, `${name}.onnx`));
    return {
      name,
      architecture: "mdx",
      file: `${name}.onnx`,
      sampleRate: 44100,
      nFft: g.nFft,
      hopLength: 1024,
      dimF: g.dimF,
      dimT: g.dimT,
      compensate: g.compensate,
      primaryStem: g.primaryStem,
      secondaryStem: g.secondaryStem,
      stems: [g.primaryStem],
    };
  }
  const python = await ensurePyTorch(log, env);
  log(`converting to ONNX with Mixdown's own ${identified.family} implementation`);
  return runExporter(
    python,
    { family: identified.family, checkpoint: identified.checkpoint, config: identified.config, outDir, name },
    env,
  );
}

/** Separates a few seconds of a fixed test signal; every stem must come back whole and finite. */
async function checkRuns(dir: string, name: string, sampleRate: number): Promise<{ stems: string[]; realtime: number }> {
  // a bag's members in turn, as `separate` runs them: the check needs one member's memory at a time
  const registry = new ModelRegistry({ modelsDir: dir, thread: false, bagMembers: "in turn" });
  try {
    const model = await registry.load(name);
    const frames = CHECK_SECONDS * sampleRate;
    const input = new Float32Array(frames * 2);
    let seed = 12345;
    for (let i = 0; i < frames; i++) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      const noise = (seed / 2 ** 32 - 0.5) * 0.1;
      input[2 * i] = 0.3 * Math.sin((2 * Math.PI * 220 * i) / sampleRate) + noise;
      input[2 * i + 1] = 0.3 * Math.sin((2 * Math.PI * 330 * i) / sampleRate) - noise;
    }
    async function* blocks() {
      yield input;
    }
    const started = performance.now();
    let seen = 0;
    const stems = new Set<string>();
    for await (const block of separateStream(blocks(), model, { totalFrames: frames })) {
      for (const [stem, data] of Object.entries(block.stems)) {
        stems.add(stem);
        if (data.length !== block.frames * 2)
          throw new ImportProblem(`the converted model gave a ${stem} block of the wrong length`);
        for (const v of data)
          if (!Number.isFinite(v)) throw new ImportProblem(`the converted model gave non-finite ${stem} samples`);
      }
      seen += block.frames;
    }
    if (seen !== frames) throw new ImportProblem(`the converted model returned ${seen} of ${frames} frames`);
    return { stems: [...stems], realtime: CHECK_SECONDS / ((performance.now() - started) / 1000) };
  } finally {
    await registry.close();
  }
}
