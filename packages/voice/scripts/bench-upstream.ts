/**
 * `bench:voice --upstream DIR`: RVC WebUI's own command line (`tools/infer_cli.py`, DIR a writable
 * checkout of RVC-Project/Retrieval-based-Voice-Conversion-WebUI) beside Mixdown's conversion, on
 * the same real-size models (the bench's `rvc.pth`, the `hubert_base.pt` Mixdown's ContentVec
 * model was converted from, RMVPE's `rmvpe.pt`, the same `.index`), the same input, the same
 * settings (pitch +2, index rate 0.75, RMS mix 0.5, protect 0.33, RMVPE) and the same threads. Each
 * side is one process from start to end (imports, model load, conversion, the output written),
 * timed, with its whole process tree's memory sampled from /proc.
 *
 * RVC runs through `bench/upstream/run_rvc.py`, which sets torch's threads and supplies
 * stand-ins for what cannot be installed here (`bench/upstream/README.md`: fairseq's HuBERT
 * loader, built on torchaudio's HuBERT; parselmouth, pyworld and torchcrepe, which only other f0
 * methods use). librosa 0.9.1 (RVC's pin) comes from `--upstream-pythonpath` or PYTHONPATH.
 */
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, readlinkSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, symlink } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { probeAudio } from "@mixdown/audio";
import { describePeaks, measurePair, measureTree, pairCells } from "@mixdown/bench/measure-tree";

const RUNNER = join(import.meta.dirname, "bench", "upstream", "run_rvc.py");
const BENCH = join(import.meta.dirname, "bench.ts");

/** The conversion both sides run: RVC's own argument names, and the parameters Mixdown's job takes. */
export const BENCH_CONVERSION = {
  pitchShift: 2,
  indexRate: 0.75,
  rmsMix: 0.5,
  protect: 0.33,
} as const;

/** A spoken phrase (espeak-ng) looped to `seconds`, mono 44.1 kHz WAV in `dir`. */
export function speechInput(seconds: number, dir: string): string {
  const speech = join(dir, "speech.wav");
  const input = join(dir, "input.wav");
  execFileSync("espeak-ng", [
    "-v",
    "en+f3",
    "-s",
    "150",
    "-w",
    speech,
    "Music is the space between the notes, and the breath between the words we sing.",
  ]);
  execFileSync("ffmpeg", ["-v", "error", "-y", "-stream_loop", "-1", "-i", speech, "-t", String(seconds), "-ar", "44100", input]);
  return input;
}

export interface VoiceUpstreamOptions {
  upstreamDir: string;
  /** extra PYTHONPATH entries for RVC's imports (librosa 0.9.1), before the environment's */
  pythonPath?: string;
  python: string;
  /** the bench's model folder (prepare_voice_bench.py) */
  modelsDir: string;
  lengths: number[];
  threads: number;
  order: "upstream-first" | "mixdown-first";
  /** arguments the Mixdown side's bench process also takes (--segment-seconds) */
  mixdownArgs: string[];
}

/** RVC reads `assets/hubert/hubert_base.pt` from its own folder: link the bench's there, never over another file. */
async function linkHubert(upstreamDir: string, hubert: string): Promise<void> {
  const target = join(upstreamDir, "assets", "hubert", "hubert_base.pt");
  let existing: string | undefined;
  try {
    existing = lstatSync(target).isSymbolicLink() ? resolve(join(upstreamDir, "assets", "hubert"), readlinkSync(target)) : target;
  } catch {
    existing = undefined;
  }
  if (existing === resolve(hubert)) return;
  if (existing !== undefined)
    throw new Error(
      `${target} is there and is not the bench's ${hubert}: move it away (the bench links its own random-weight HuBERT there)`,
    );
  await mkdir(join(upstreamDir, "assets", "hubert"), { recursive: true });
  await symlink(resolve(hubert), target);
}

export async function benchVoiceUpstream(options: VoiceUpstreamOptions): Promise<void> {
  const upstreamDir = resolve(options.upstreamDir);
  if (!existsSync(join(upstreamDir, "tools", "infer_cli.py")))
    throw new Error(`${upstreamDir} is not an RVC WebUI checkout (no tools/infer_cli.py)`);
  const file = (name: string) => join(options.modelsDir, name);
  await linkHubert(upstreamDir, file("hubert_base.pt"));
  // RVC runs as its own CLI does, on the system's malloc: not on a jemalloc ./mixdown.sh may preload.
  const { LD_PRELOAD: _preload, MALLOC_CONF: _conf, ...systemEnv } = process.env;
  console.log(
    `# RVC beside RVC WebUI's infer_cli.py, ${new Date().toISOString()}, ${cpus().length} x ${cpus()[0]?.model ?? "cpu"}, load average ${loadavg()[0].toFixed(1)} at start`,
  );
  console.log(
    `# models in ${options.modelsDir} (RVC v2 48 kHz, HuBERT-base, RMVPE, its feature index; random weights); RVC in ${upstreamDir}; ${options.threads} threads; ${options.order}`,
  );
  console.log(
    "# peak RSS: the sum of every process's VmHWM in the command's tree, and in brackets the largest sum of their resident sets at one 100 ms sample",
  );
  console.log("");
  console.log(
    "| input | RVC wall s | Mixdown wall s | RVC / Mixdown wall | RVC peak RSS MB | Mixdown peak RSS MB | Mixdown / RVC RSS | output s (RVC, Mixdown) | load avg |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  const peaks: string[] = [];
  for (const seconds of options.lengths) {
    const work = await mkdtemp(join(tmpdir(), "mixdown-bench-voice-upstream-"));
    try {
      const input = speechInput(seconds, work);
      await mkdir(join(work, "weights"));
      await symlink(resolve(file("rvc.pth")), join(work, "weights", "rvc.pth"));
      const upstreamOut = join(work, "rvc.wav");
      const runUpstream = () =>
        measureTree(
          options.python,
          [
            RUNNER,
            "--threads",
            String(options.threads),
            upstreamDir,
            "--f0up_key",
            String(BENCH_CONVERSION.pitchShift),
            "--input_path",
            input,
            "--index_path",
            resolve(file("model.index")),
            "--f0method",
            "rmvpe",
            "--opt_path",
            upstreamOut,
            "--model_name",
            "rvc.pth",
            "--index_rate",
            String(BENCH_CONVERSION.indexRate),
            "--device",
            "cpu",
            "--filter_radius",
            "3",
            "--resample_sr",
            "0",
            "--rms_mix_rate",
            String(BENCH_CONVERSION.rmsMix),
            "--protect",
            String(BENCH_CONVERSION.protect),
          ],
          {
            env: {
              ...systemEnv,
              OMP_NUM_THREADS: String(options.threads),
              MKL_NUM_THREADS: String(options.threads),
              PYTHONPATH: [options.pythonPath, process.env.PYTHONPATH].filter(Boolean).join(":"),
              weight_root: join(work, "weights"),
              rmvpe_root: resolve(options.modelsDir),
            },
            log: join(work, "upstream.log"),
          },
        );
      const runMixdown = () =>
        measureTree(
          process.execPath,
          [
            ...process.execArgv,
            BENCH,
            "--seconds",
            String(seconds),
            "--input",
            input,
            "--out",
            join(work, "mixdown"),
            "--threads",
            String(options.threads),
            "--dir",
            options.modelsDir,
            ...options.mixdownArgs,
          ],
          { log: join(work, "mixdown.log") },
        );
      const load = loadavg()[0];
      const { upstream, mixdown } = await measurePair(options.order, runUpstream, runMixdown);
      const mixdownLog = await readFile(join(work, "mixdown.log"), "utf8");
      const mixdownOut = /^output (.+)$/m.exec(mixdownLog)?.[1];
      if (!mixdownOut) throw new Error(`the Mixdown side named no output; its log:\n${mixdownLog.slice(-2000)}`);
      console.log(
        `${pairCells(seconds, upstream, mixdown)} ` +
          `${(await probeAudio(upstreamOut)).duration.toFixed(2)}, ${(await probeAudio(mixdownOut)).duration.toFixed(2)} | ${load.toFixed(1)}-${loadavg()[0].toFixed(1)} |`,
      );
      peaks.push(`${seconds} s, RVC: ${describePeaks(upstream)}`, `${seconds} s, Mixdown: ${describePeaks(mixdown)}`);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
  console.log(["", ...peaks].join("\n"));
}
