// What `mixdown separate` over many files saves by loading the models once, and whether running
// files side by side (what a --jobs option would do) is faster on this machine. Makes FILES
// mixtures of SECONDS each in a temporary folder and separates them three ways, each in fresh
// processes, printing the wall time per file of each:
//   one run      `separate DIR`: one process, the models loaded once
//   per file     `separate FILE` once per file, one after another: a load per file
//   2 side by side  two `separate` runs at once over half the files each, --threads 1 each
// Usage: pnpm bench:separate-many [--files 6] [--seconds 8] [--model vocals]
import { execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import { repoRoot } from "../src/local-state.ts";

const { values } = parseArgs({
  options: {
    files: { type: "string", default: "6" },
    seconds: { type: "string", default: "8" },
    model: { type: "string", default: "vocals" },
  },
});
const files = Number(values.files);
const seconds = Number(values.seconds);

function separate(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "apps/cli/src/main.ts", "separate", ...args], {
      cwd: repoRoot,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (c) => (stderr += c));
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`separate ${args.join(" ")}: ${code}\n${stderr}`))));
  });
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return (performance.now() - start) / 1000;
}

const dir = await mkdtemp(path.join(os.tmpdir(), "mixdown-bench-separate-many-"));
try {
  const input = path.join(dir, "in");
  await mkdir(input);
  for (let i = 0; i < files; i++)
    await promisify(execFile)("ffmpeg", [
      "-v",
      "error",
      "-f",
      "lavfi",
      "-i",
      `sine=f=${220 + 55 * i}:r=44100:d=${seconds}`,
      "-f",
      "lavfi",
      "-i",
      `anoisesrc=c=pink:r=44100:d=${seconds}:a=0.05`,
      "-filter_complex",
      "[0][1]amix=inputs=2,aformat=channel_layouts=stereo",
      path.join(input, `song-${i}.flac`),
    ]);
  const songs = (await readdir(input)).sort().map((f) => path.join(input, f));
  const model = ["--model", values.model];
  const out = (name: string) => path.join(dir, name);

  const oneRun = await timed(() => separate([input, ...model, "--out", out("one-run")]));
  const perFile = await timed(async () => {
    for (const song of songs) await separate([song, ...model, "--out", path.join(out("per-file"), path.basename(song))]);
  });
  const half = Math.ceil(songs.length / 2);
  const sideBySide = await timed(() =>
    Promise.all([
      separate([...songs.slice(0, half), ...model, "--threads", "1", "--out", out("side-by-side")]),
      separate([...songs.slice(half), ...model, "--threads", "1", "--out", out("side-by-side")]),
    ]),
  );
  const perSong = (s: number) => `${(s / files).toFixed(2)} s per file (${s.toFixed(1)} s)`;
  console.log(
    `${files} files of ${seconds} s, model ${values.model}, ${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(1)}`,
  );
  console.log(`one run:        ${perSong(oneRun)}`);
  console.log(`per file:       ${perSong(perFile)}`);
  console.log(`2 side by side: ${perSong(sideBySide)}`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
