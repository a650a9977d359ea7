/**
 * `bench:separation --upstream DIR`: the upstream tool's own command line beside
 * `./mixdown.sh separate`, on the same checkpoint, the same input and the same threads, each
 * timed end to end (start-up included) with its whole process tree's memory sampled from /proc,
 * and the SNR of Mixdown's stems against the upstream's.
 *
 * - HTDemucs (a single `.th`, or a bag's yaml beside its `.th` files): demucs's
 *   `python -m demucs.separate` (DIR is a demucs checkout), shifts 0, overlap 0.25, float32 WAV,
 *   no clipping.
 * - BS-RoFormer, Mel-Band RoFormer, MDX23C: MSST's `inference.py` (DIR is a
 *   Music-Source-Separation-Training checkout) at the yaml's inference settings, float WAV,
 *   `--extract_instrumental` where Mixdown writes the complement stem too.
 *
 * Both run through `upstream/run_upstream.py`, which sets torch's threads and supplies stand-ins
 * for imports a separation never uses (`upstream/shims/README.md`); the upstream's own imports
 * (einops, julius, open-unmix, ...) come from `--upstream-pythonpath` or PYTHONPATH.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { basename, dirname, extname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { describePeaks, measurePair, measureTree, pairCells, type TreeMeasure } from "@mixdown/bench/measure-tree";
import { syntheticSong } from "./synthetic-song.ts";

const run = promisify(execFile);
const REPO = resolve(import.meta.dirname, "../../..");
const RUNNER = join(import.meta.dirname, "upstream", "run_upstream.py");
const MSST_FAMILIES = new Set(["bs_roformer", "mel_band_roformer", "mdx23c"]);

export interface UpstreamOptions {
  upstreamDir: string;
  /** extra PYTHONPATH entries for the upstream's imports, before the environment's */
  pythonPath?: string;
  python: string;
  /** the Mixdown model (an import of `checkpoint`) */
  model: string;
  modelsDir: string;
  /** a demucs `.th` or bag yaml, or an MSST checkpoint */
  checkpoint: string;
  /** MSST's yaml */
  config?: string;
  durations: number[];
  threads: number;
  /** which to run first in each pair (alternate to spread the machine's drift) */
  order: "upstream-first" | "mixdown-first";
  keep?: string;
}

/** A file decoded to interleaved stereo float32 by ffmpeg (any WAV subtype). */
async function readStereo(path: string): Promise<Float32Array> {
  const { stdout } = await run("ffmpeg", ["-v", "error", "-i", path, "-f", "f32le", "-ac", "2", "-"], {
    encoding: "buffer",
    maxBuffer: 2 ** 31,
  });
  const bytes = stdout as Buffer;
  return new Float32Array(bytes.buffer, bytes.byteOffset, Math.floor(bytes.byteLength / 4));
}

/**
 * SNR in dB of `estimate` against `reference` (the upstream's stem), over their common length,
 * leaving out the samples where the reference sits at full scale: demucs writes its float WAV
 * through torchaudio's sox backend, which clips at ±1 even with `--clip-mode none`, and a
 * random-weight network's stems go past 1 (Mixdown's float WAV keeps them). `clipped` is the
 * fraction left out. MSST writes float WAV with soundfile, unclipped: `referenceClips` false.
 */
export function snrDb(reference: Float32Array, estimate: Float32Array, referenceClips: boolean): { db: number; clipped: number } {
  const n = Math.min(reference.length, estimate.length);
  let signal = 0;
  let noise = 0;
  let clipped = 0;
  for (let i = 0; i < n; i++) {
    const r = reference[i]!;
    if (referenceClips && Math.abs(r) >= 1 - 1e-6) {
      clipped++;
      continue;
    }
    const d = r - estimate[i]!;
    signal += r * r;
    noise += d * d;
  }
  return { db: 10 * Math.log10(signal / Math.max(noise, 1e-30)), clipped: clipped / Math.max(n, 1) };
}

interface Manifest {
  architecture: string;
  stems: string[];
  secondaryStem?: string;
}

/** The upstream's command for one input: its argv (after the runner), its output folder and its stem names. */
async function upstreamCommand(
  family: string,
  options: UpstreamOptions,
  manifest: Manifest,
  input: string,
  work: string,
): Promise<{ argv: string[]; outDir: string; stemName: (file: string) => string | undefined }> {
  const outDir = join(work, "upstream");
  if (family === "htdemucs") {
    // demucs's own repository loader: a folder of `<signature>.th` files and bag yamls; a `.th`
    // whose name has a dash is read as `<signature>-<sha256 prefix>` and checked, so a single
    // checkpoint is linked under a plain name
    let repo: string;
    let name: string;
    if ([".yaml", ".yml"].includes(extname(options.checkpoint))) {
      repo = dirname(options.checkpoint);
      name = basename(options.checkpoint, extname(options.checkpoint));
    } else {
      repo = join(work, "repo");
      name = "benchmodel";
      await mkdir(repo, { recursive: true });
      await symlink(options.checkpoint, join(repo, `${name}.th`));
    }
    return {
      argv: [
        "-m",
        "demucs.separate",
        "--repo",
        repo,
        "-n",
        name,
        "-d",
        "cpu",
        "--shifts",
        "0",
        "--overlap",
        "0.25",
        "--float32",
        "--clip-mode",
        "none",
        "--filename",
        "{stem}.{ext}",
        "-o",
        outDir,
        input,
      ],
      outDir: join(outDir, name),
      stemName: (file) => (file.endsWith(".wav") ? basename(file, ".wav") : undefined),
    };
  }
  if (!options.config) throw new Error(`${family}: MSST needs the model's yaml (--upstream-config)`);
  // flash attention needs torch 2; Debian's is 1.13, and MSST's non-flash path computes the same
  let config = options.config;
  const yaml = await readFile(config, "utf8");
  // (YAML 1.1's true in any of its spellings, as PyYAML reads it: Kimberley Jensen's config says `True`)
  const flash = /^(\s*flash_attn:\s*)(true|yes|on)\s*(#.*)?$/gim;
  if (flash.test(yaml)) {
    config = join(work, basename(config));
    await writeFile(config, yaml.replace(flash, "$1false"));
  }
  // MSST separates every file of a folder
  const inputDir = join(work, "input");
  await mkdir(inputDir, { recursive: true });
  await symlink(input, join(inputDir, basename(input)));
  const argv = [
    join(options.upstreamDir, "inference.py"),
    "--model_type",
    family,
    "--config_path",
    config,
    "--start_check_point",
    options.checkpoint,
    "--input_folder",
    inputDir,
    "--store_dir",
    outDir,
    "--force_cpu",
    "--pcm_type",
    "FLOAT",
    "--filename_template",
    "{instr}",
    "--disable_detailed_pbar",
  ];
  if (manifest.secondaryStem) argv.push("--extract_instrumental");
  return {
    argv,
    outDir,
    stemName: (file) => {
      if (!file.endsWith(".wav")) return undefined;
      const stem = basename(file, ".wav");
      return stem === "instrumental" && manifest.secondaryStem ? manifest.secondaryStem : stem;
    },
  };
}

interface PairResult {
  seconds: number;
  upstream: TreeMeasure;
  mixdown: TreeMeasure;
  snr: Record<string, { db: number; clipped: number }>;
  /** the allocator Mixdown's process ran on */
  allocator: string;
}

export async function benchUpstream(options: UpstreamOptions): Promise<void> {
  const manifest = JSON.parse(await readFile(join(options.modelsDir, `${options.model}.json`), "utf8")) as Manifest;
  const family = manifest.architecture;
  if (family !== "htdemucs" && !MSST_FAMILIES.has(family))
    throw new Error(
      `${options.model}: --upstream compares htdemucs (demucs) and ${[...MSST_FAMILIES].join(", ")} (MSST), not ${family}`,
    );
  const tool = family === "htdemucs" ? "demucs.separate" : "MSST inference.py";
  // The upstream tool runs as its own CLI does, on the system's malloc: not on the jemalloc that
  // ./mixdown.sh preloads for the benches (Mixdown's side gets it from `./mixdown.sh separate`).
  const { LD_PRELOAD: _preload, MALLOC_CONF: _conf, ...systemEnv } = process.env;
  const env: NodeJS.ProcessEnv = {
    ...systemEnv,
    OMP_NUM_THREADS: String(options.threads),
    MKL_NUM_THREADS: String(options.threads),
    PYTHONPATH: [family === "htdemucs" ? options.upstreamDir : undefined, options.pythonPath, process.env.PYTHONPATH]
      .filter(Boolean)
      .join(":"),
  };
  console.log(
    `# separation beside upstream, ${new Date().toISOString()}, ${cpus().length} x ${cpus()[0]?.model ?? "cpu"}, load average ${loadavg()[0].toFixed(1)} at start`,
  );
  console.log(
    `# ${options.model} (${family}) from ${options.modelsDir} against ${tool} in ${options.upstreamDir} on ${options.checkpoint}; ${options.threads} threads; ${options.order}`,
  );
  console.log(
    "# peak RSS: the sum of every process's VmHWM in the command's tree (launchers, ffmpeg, ...), and in brackets the largest sum of their resident sets at one 100 ms sample",
  );
  console.log("");
  console.log(
    "| input | upstream wall s | Mixdown wall s | upstream / Mixdown wall | upstream peak RSS MB | Mixdown peak RSS MB | Mixdown / upstream RSS | SNR vs upstream dB (per stem; samples the upstream wrote at full scale left out) | load avg |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  const results: PairResult[] = [];
  for (const seconds of options.durations) {
    const input = await syntheticSong(seconds);
    const work = await mkdtemp(join(tmpdir(), "mixdown-bench-upstream-"));
    try {
      const up = await upstreamCommand(family, options, manifest, input, work);
      const mixOut = join(work, "mixdown");
      const runUpstream = () =>
        measureTree(options.python, [RUNNER, "--threads", String(options.threads), ...up.argv], {
          env,
          log: join(work, "upstream.log"),
        });
      const runMixdown = () =>
        measureTree(
          join(REPO, "mixdown.sh"),
          [
            "separate",
            input,
            "--model",
            options.model,
            "--models-dir",
            options.modelsDir,
            "--out",
            mixOut,
            "--threads",
            String(options.threads),
            ...(family === "htdemucs" ? ["--overlap", "0.25", "--shifts", "0"] : []),
          ],
          { log: join(work, "mixdown.log") },
        );
      const load = loadavg()[0];
      const { upstream, mixdown } = await measurePair(options.order, runUpstream, runMixdown);
      const snr: Record<string, { db: number; clipped: number }> = {};
      for (const file of (await readdir(up.outDir)).sort()) {
        const stem = up.stemName(file);
        if (!stem || !manifest.stems.concat(manifest.secondaryStem ?? []).includes(stem)) continue;
        snr[stem] = snrDb(
          await readStereo(join(up.outDir, file)),
          await readStereo(join(mixOut, `${stem}.wav`)),
          family === "htdemucs",
        );
      }
      if (Object.keys(snr).length === 0) throw new Error(`no stem in common between ${up.outDir} and ${mixOut}`);
      // the CLI's last line names the allocator it ran on (./mixdown.sh separate: jemalloc unless MODEL_ALLOCATOR=system)
      const allocator = /; allocator (\w+)$/m.exec(await readFile(join(work, "mixdown.log"), "utf8"))?.[1] ?? "unknown";
      results.push({ seconds, upstream, mixdown, snr, allocator });
      const snrText = Object.entries(snr)
        .map(
          ([stem, { db, clipped }]) =>
            `${stem} ${db.toFixed(1)}${clipped > 0 ? ` [${(clipped * 100).toFixed(3)} % clipped]` : ""}`,
        )
        .join(", ");
      console.log(`${pairCells(seconds, upstream, mixdown)} ${snrText} | ${load.toFixed(1)}-${loadavg()[0].toFixed(1)} |`);
      if (options.keep) {
        const dest = join(resolve(options.keep), `${options.model}-${seconds}s`);
        await mkdir(dest, { recursive: true });
        await run("cp", ["-r", up.outDir, join(dest, "upstream")]);
        await run("cp", ["-r", mixOut, join(dest, "mixdown")]);
      }
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
  console.log("");
  for (const r of results) {
    for (const [side, m] of [
      ["upstream", r.upstream],
      ["Mixdown", r.mixdown],
    ] as const) {
      const on = side === "Mixdown" ? ` (allocator ${r.allocator})` : "";
      console.log(`${r.seconds} s, ${side}${on}: ${describePeaks(m)}`);
    }
  }
  await writeFile(join(tmpdir(), "mixdown-bench", `last-upstream-${options.model}.json`), JSON.stringify(results, null, 2));
}
