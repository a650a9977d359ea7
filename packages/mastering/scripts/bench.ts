/**
 * Memory and time of a reference mastering by input length: `./mixdown.sh master --reference`
 * (the CLI runs what the worker's thread runs) on synthesised songs of 1 and 10 minutes, the peak
 * resident memory of its process tree sampled from /proc. With `--upstream DIR` (a checkout of
 * sergree/matchering, run on Debian's python3 with `scripts/matchering-upstream.py`) the same
 * inputs go through upstream Matchering too, and the outputs are compared (SNR).
 *
 *   pnpm bench:mastering [--minutes 1,10] [--upstream /tmp/matchering-upstream]
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { promisify } from "node:util";
import { measureTree, type TreeMeasure } from "@mixdown/bench/measure-tree";
import { concatSamples, decodeToPcm } from "@mixdown/audio";

const run = promisify(execFile);
const REPO = resolve(import.meta.dirname, "../../..");
const { values } = parseArgs({ options: { minutes: { type: "string", default: "1,10" }, upstream: { type: "string" } } });
const minutes = values.minutes.split(",").map(Number);

/** A song whose loudness, balance and spectrum move over its length (a verse/chorus every 20 s), stereo 44.1 kHz FLAC. */
async function song(path: string, seconds: number): Promise<void> {
  const section = "(0.55+0.45*gt(mod(t,40),20))";
  const left = `${section}*(0.3*sin(2*PI*55*t)+0.15*sin(2*PI*220*t)*(0.6+0.4*sin(2*PI*1.5*t))+0.25*(random(0)-0.5)*exp(-12*mod(t,0.5)))`;
  const right = `${section}*(0.3*sin(2*PI*55*t)+0.15*sin(2*PI*277*t)*(0.6+0.4*cos(2*PI*1.5*t))+0.25*(random(1)-0.5)*exp(-12*mod(t,0.5)))`;
  await run("ffmpeg", [
    "-v",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    `aevalsrc='${left}|${right}':s=44100:d=${seconds}`,
    "-c:a",
    "flac",
    path,
  ]);
}

async function stereo(path: string): Promise<Float32Array> {
  const blocks: Float32Array[] = [];
  for await (const b of decodeToPcm(path, { sampleRate: 44100 })) blocks.push(b);
  return concatSamples(blocks, (n) => new Float32Array(n));
}

function snrDb(actual: Float32Array, expected: Float32Array): number {
  let s = 0;
  let n = 0;
  for (let i = 0; i < Math.min(actual.length, expected.length); i++) {
    s += expected[i]! ** 2;
    n += (actual[i]! - expected[i]!) ** 2;
  }
  return 10 * Math.log10(s / Math.max(n, 1e-30));
}

const mb = (m: TreeMeasure) =>
  `${m.rssSumPeakMb.toFixed(0)} MB (largest process ${m.byProcess[0]?.hwmMb.toFixed(0)} MB: ${m.byProcess[0]?.command.split(" ").slice(0, 2).join(" ")})`;

const dir = await mkdtemp(join(tmpdir(), "bench-mastering-"));
try {
  const reference = join(REPO, "packages/mastering/test/fixtures/matchering/reference-loud-stereo.wav");
  console.log(`| length | Mixdown: peak RSS of the tree | wall | upstream Matchering: peak RSS | wall | SNR |`);
  console.log(`| --- | --- | --- | --- | --- | --- |`);
  for (const m of minutes) {
    const input = join(dir, `song-${m}min.flac`);
    await song(input, m * 60);
    const out = join(dir, `out-${m}`);
    const ours = await measureTree(
      process.execPath,
      ["--import", "tsx", "apps/cli/src/main.ts", "master", input, "--reference", reference, "--out", out],
      {
        log: join(dir, `ours-${m}.log`),
      },
    );
    let upstreamCells = "– | – | –";
    if (values.upstream) {
      const script = join(REPO, "packages/mastering/scripts/matchering-upstream.py");
      const theirsOut = join(dir, `upstream-${m}.wav`);
      const theirs = await measureTree("/usr/bin/python3", [script, input, reference, theirsOut], {
        env: { ...process.env, PYTHONPATH: values.upstream },
        log: join(dir, `upstream-${m}.log`),
      });
      const snr = snrDb(await stereo(join(out, "master.wav")), await stereo(theirsOut));
      upstreamCells = `${mb(theirs)} | ${(theirs.wallMs / 1000).toFixed(1)} s | ${snr.toFixed(1)} dB`;
    }
    console.log(`| ${m} min | ${mb(ours)} | ${(ours.wallMs / 1000).toFixed(1)} s | ${upstreamCells} |`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
