/**
 * Held-out quality of the default models through the engine: median SDR per
 * stem over clips made by models/recipe/make_dataset.py (validation voices and
 * seeds), next to a centre-channel baseline as the floor.
 *
 *   pnpm eval:separation [--count 40] [--seconds 20] [--models vocals,stems]
 *                        [--split valid|valid-wide|valid-matched|ood|ood-voices|ood-instruments]
 *                        [--data DIR] [--models-dir DIR] [--threads N]
 *                        [--ensemble avg_wave[,min_mag,...|all]]
 *
 * --ensemble runs the --models together as an ensemble (separateEnsemble) with the first algorithm
 * named, keeping each member's own files: the members are scored on those (the same as running
 * each alone), and every other algorithm named is applied to the same files (combineStemFiles), so
 * one pass of the members scores them all. The ensembles are scored on the stems every member
 * gives; the time table compares each member's wall time with the ensemble's (members + combining),
 * and the paired table gives, per clip, the ensemble's SDR minus the best member's on that stem.
 *
 * --split picks make_dataset.py's set: `valid` (default; the synthetic voices and
 * FluidR3 the models were first trained on, held-out voices and seeds), `valid-wide`
 * (the widened training material in unseen clips), `valid-matched` (only the widened
 * training's recorded material: its Festival voices, Hydrogen kits and soundfonts,
 * `ood`'s in-domain twin) or one made only of material held
 * out of training (`ood`: held-out Festival voices, Hydrogen kits and
 * soundfont; `ood-voices` / `ood-instruments`: one of the two held out).
 *
 * SDR = 10·log10(Σ s² / Σ (s − ŝ)²) per clip over both channels; clips whose
 * reference stem is silent are left out of that stem's median.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs, promisify } from "node:util";
import { decodeToPcm } from "@mixdown/audio";
import { ENSEMBLE_ALGORITHMS, isEnsembleAlgorithm, type EnsembleAlgorithm } from "../src/ensemble-names.ts";
import { ModelRegistry } from "../src/model-registry.ts";
import { combineStemFiles, commonStems, separateEnsemble } from "../src/separate-ensemble.ts";
import { separateFile } from "../src/separate-file.ts";

const run = promisify(execFile);
const REPO = resolve(import.meta.dirname, "../../..");
const RATE = 44100;
const SOURCES = ["vocals", "drums", "bass", "other"] as const;

/** Interleaved stereo at 44.1 kHz. */
async function readInterleaved(path: string): Promise<Float32Array> {
  const blocks: Float32Array[] = [];
  let length = 0;
  for await (const block of decodeToPcm(path, { sampleRate: RATE, blockFrames: 1 << 16 })) {
    blocks.push(block);
    length += block.length;
  }
  const out = new Float32Array(length);
  let at = 0;
  for (const b of blocks) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}

function sdr(reference: Float32Array, estimate: Float32Array): number | undefined {
  const n = Math.min(reference.length, estimate.length);
  let signal = 0;
  let error = 0;
  for (let i = 0; i < n; i++) {
    signal += reference[i] * reference[i];
    error += (reference[i] - estimate[i]) ** 2;
  }
  if (signal < 1e-6) return undefined;
  return 10 * Math.log10(signal / Math.max(error, 1e-12));
}

function median(values: number[]): number {
  const v = [...values].sort((a, b) => a - b);
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

function sum(arrays: Float32Array[]): Float32Array {
  const out = new Float32Array(arrays[0].length);
  for (const a of arrays) for (let i = 0; i < out.length; i++) out[i] += a[i];
  return out;
}

async function ensureDataset(dir: string, split: string, count: number, seconds: number): Promise<string[]> {
  const clips = async () =>
    existsSync(dir) ? (await readdir(dir)).filter((d) => /^\d+$/.test(d) && existsSync(join(dir, d, "other.wav"))).sort() : [];
  let found = await clips();
  if (found.length < count) {
    const script = join(REPO, "models/recipe/make_dataset.py");
    if (!existsSync(script))
      throw new Error(`${script} is missing: pass --data with a directory of <clip>/{mixture,vocals,drums,bass,other}.wav`);
    console.error(`building ${count} ${split} clips of ${seconds} s in ${dir} ...`);
    await mkdir(dir, { recursive: true });
    await run(
      "/usr/bin/python3",
      [script, "--split", split, "--count", String(count), "--seconds", String(seconds), "--out", dir],
      {
        maxBuffer: 64 << 20,
      },
    );
    found = await clips();
  }
  return found.slice(0, count).map((d) => join(dir, d));
}

type Scores = Map<string, number[]>;

function add(scores: Scores, stem: string, value: number | undefined): void {
  if (value === undefined) return;
  if (!scores.has(stem)) scores.set(stem, []);
  scores.get(stem)!.push(value);
}

function printTable(title: string, scores: Scores, stems: string[]): void {
  console.log(`\n${title}`);
  console.log("| stem | median SDR dB | mean SDR dB | clips |");
  console.log("|---|---|---|---|");
  for (const stem of stems) {
    const v = scores.get(stem) ?? [];
    if (v.length === 0) continue;
    console.log(`| ${stem} | ${median(v).toFixed(2)} | ${(v.reduce((a, b) => a + b, 0) / v.length).toFixed(2)} | ${v.length} |`);
  }
}

/** make_dataset.py's held-out sets (its `SPLITS` less the training ones). */
const HELDOUT_SPLITS = ["valid", "valid-wide", "valid-matched", "ood", "ood-voices", "ood-instruments"];

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      count: { type: "string", default: "40" },
      seconds: { type: "string", default: "20" },
      split: { type: "string", default: "valid" },
      models: { type: "string", default: "vocals,stems" },
      data: { type: "string" },
      "models-dir": { type: "string", default: join(REPO, "models") },
      threads: { type: "string" },
      ensemble: { type: "string" },
    },
  });
  const algorithms: EnsembleAlgorithm[] =
    values.ensemble === undefined
      ? []
      : values.ensemble === "all"
        ? [...ENSEMBLE_ALGORITHMS]
        : values.ensemble.split(",").map((a) => {
            if (!isEnsembleAlgorithm(a)) throw new Error(`--ensemble ${a}: one of ${ENSEMBLE_ALGORITHMS.join(", ")} (or all)`);
            return a;
          });
  const count = Number(values.count);
  const seconds = Number(values.seconds);
  const split = values.split;
  if (!HELDOUT_SPLITS.includes(split)) throw new Error(`--split ${split}: one of ${HELDOUT_SPLITS.join(", ")}`);
  const dataDir = resolve(values.data ?? join(tmpdir(), "mixdown-eval", `${split}-${count}x${seconds}s`));
  const clips = await ensureDataset(dataDir, split, count, seconds);
  const modelsDir = resolve(values["models-dir"]);
  const models = values.models.split(",").filter((m) => existsSync(join(modelsDir, `${m}.json`)));
  if (algorithms.length > 0 && models.length < 2)
    throw new Error(`--ensemble needs 2 or more installed --models, got ${models.join(", ")}`);
  const registry = new ModelRegistry({ modelsDir, ...(values.threads ? { intraOpThreads: Number(values.threads) } : {}) });
  const work = await mkdtemp(join(tmpdir(), "mixdown-eval-out-"));
  console.log(
    `# separation eval: ${clips.length} ${split} clips of ${seconds} s from ${dataDir}; models ${models.join(", ") || "none"} from ${modelsDir}`,
  );

  const baseline: Scores = new Map();
  const perModel = new Map<string, Scores>(models.map((m) => [m, new Map()]));
  const perEnsemble = new Map<EnsembleAlgorithm, Scores>(algorithms.map((a) => [a, new Map()]));
  // per clip: the ensemble's SDR minus the best member's, per stem
  const gains = new Map<EnsembleAlgorithm, Scores>(algorithms.map((a) => [a, new Map()]));
  const wall = {
    members: new Map<string, number>(models.map((m) => [m, 0])),
    ensemble: 0,
    combine: new Map<EnsembleAlgorithm, number>(),
  };
  let audioSeconds = 0;
  let ensembleStems: string[] = [];
  try {
    for (const clip of clips) {
      const mixture = await readInterleaved(join(clip, "mixture.wav"));
      const refs = Object.fromEntries(
        await Promise.all(SOURCES.map(async (s) => [s, await readInterleaved(join(clip, `${s}.wav`))] as const)),
      ) as Record<(typeof SOURCES)[number], Float32Array>;
      const backingRef = sum([refs.drums, refs.bass, refs.other]);

      const centre = new Float32Array(mixture.length);
      for (let i = 0; i < mixture.length; i += 2) centre[i] = centre[i + 1] = 0.5 * (mixture[i] + mixture[i + 1]);
      add(baseline, "vocals", sdr(refs.vocals, centre));
      add(
        baseline,
        "backing",
        sdr(
          backingRef,
          mixture.map((v, i) => v - centre[i]),
        ),
      );

      const reference = (stem: string) => (stem === "backing" ? backingRef : refs[stem as (typeof SOURCES)[number]]);
      const score = async (scores: Scores, stems: Record<string, { wav?: string }>) => {
        const clipScores = new Map<string, number | undefined>();
        for (const [stem, files] of Object.entries(stems)) {
          if (!reference(stem)) continue;
          clipScores.set(stem, sdr(reference(stem)!, await readInterleaved(files.wav!)));
          add(scores, stem, clipScores.get(stem));
        }
        const sourceScores = SOURCES.map((s) => clipScores.get(s));
        if (sourceScores.every((v) => v !== undefined))
          add(scores, "4-stem mean", sourceScores.reduce((a, b) => a + b!, 0)! / SOURCES.length);
        return clipScores;
      };
      audioSeconds += mixture.length / 2 / RATE;

      if (algorithms.length === 0) {
        for (const name of models) {
          const outDir = join(work, name);
          const result = await separateFile({ inputPath: join(clip, "mixture.wav"), model: await registry.load(name), outDir });
          await score(perModel.get(name)!, result.stems);
          await rm(outDir, { recursive: true, force: true });
        }
      } else {
        const loaded = await Promise.all(models.map((m) => registry.load(m)));
        const outDir = join(work, "ensemble");
        const result = await separateEnsemble({
          inputPath: join(clip, "mixture.wav"),
          models: loaded,
          algorithm: algorithms[0]!,
          outDir: join(outDir, algorithms[0]!),
          membersDir: join(outDir, "members"),
          keepMembers: true,
        });
        wall.ensemble += result.timings.totalMs / 1000;
        wall.combine.set(algorithms[0]!, (wall.combine.get(algorithms[0]!) ?? 0) + result.combineMs / 1000);
        const memberScores: Map<string, number | undefined>[] = [];
        for (const member of result.members) {
          wall.members.set(member.model, wall.members.get(member.model)! + member.timings.totalMs / 1000);
          memberScores.push(await score(perModel.get(member.model)!, member.stems));
        }
        const stems = commonStems(loaded);
        ensembleStems = stems.map((s) => s.name);
        for (const algorithm of algorithms) {
          let files: Record<string, { wav?: string }> = result.stems;
          if (algorithm !== algorithms[0]) {
            const started = performance.now();
            files = {};
            for (const stem of stems) {
              const path = join(outDir, algorithm, `${stem.name}.wav`);
              await mkdir(join(outDir, algorithm), { recursive: true });
              await combineStemFiles({
                inputs: stem.from.map((s, i) => result.members[i]!.stems[s]!.wav!),
                algorithm,
                targets: [{ format: "wav", sampleFormat: "f32", path }],
              });
              files[stem.name] = { wav: path };
            }
            wall.combine.set(algorithm, (wall.combine.get(algorithm) ?? 0) + (performance.now() - started) / 1000);
          }
          const clipScores = await score(perEnsemble.get(algorithm)!, files);
          for (const [stem, value] of clipScores) {
            const best = Math.max(...memberScores.map((m) => m.get(stem) ?? -Infinity));
            if (value !== undefined && Number.isFinite(best)) add(gains.get(algorithm)!, stem, value - best);
          }
        }
        await rm(outDir, { recursive: true, force: true });
      }
      process.stderr.write(".");
    }
    process.stderr.write("\n");
  } finally {
    await registry.close();
    await rm(work, { recursive: true, force: true });
  }

  printTable("centre-channel baseline (vocals = (L+R)/2, backing = mixture − that)", baseline, ["vocals", "backing"]);
  for (const [name, scores] of perModel) {
    printTable(`model "${name}"`, scores, ["vocals", "drums", "bass", "other", "4-stem mean", "backing"]);
  }
  if (algorithms.length === 0) return;
  const order = ["vocals", "drums", "bass", "other", "4-stem mean", "backing"].filter(
    (s) => s === "4-stem mean" || ensembleStems.includes(s),
  );
  for (const [algorithm, scores] of perEnsemble) printTable(`ensemble ${models.join(" + ")}, ${algorithm}`, scores, order);
  console.log(`\nensemble minus the best member on each clip (dB; "better" = share of clips where the ensemble wins)`);
  console.log("| algorithm | stem | median | mean | better |");
  console.log("|---|---|---|---|---|");
  for (const [algorithm, scores] of gains) {
    for (const stem of order) {
      const v = scores.get(stem);
      if (!v?.length) continue;
      const mean = v.reduce((a, b) => a + b, 0) / v.length;
      console.log(
        `| ${algorithm} | ${stem} | ${median(v).toFixed(2)} | ${mean.toFixed(2)} | ${v.filter((x) => x > 0).length}/${v.length} |`,
      );
    }
  }
  console.log(`\ntime (${audioSeconds.toFixed(0)} s of audio, wall seconds; members run one after another inside the ensemble)`);
  console.log("| run | seconds | x realtime |");
  console.log("|---|---|---|");
  for (const [name, s] of wall.members) console.log(`| ${name} alone | ${s.toFixed(1)} | ${(audioSeconds / s).toFixed(1)} |`);
  console.log(
    `| ensemble (${algorithms[0]}: members + combining) | ${wall.ensemble.toFixed(1)} | ${(audioSeconds / wall.ensemble).toFixed(1)} |`,
  );
  for (const [algorithm, s] of wall.combine)
    console.log(`| combining pass, ${algorithm} | ${s.toFixed(1)} | ${(audioSeconds / s).toFixed(1)} |`);
}

await main();
