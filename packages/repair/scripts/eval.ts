// `pnpm eval:repair [--voices 4] [--models-dir models]`: what each vocal repair step gains, on a set
// it makes itself. Clean voices: espeak-ng (apt: espeak-ng) speaking a sentence each in four
// voices, at 48 kHz. Noise: white and pink (seeded), and babble (four other voices speaking other
// sentences at once), added at 0, 5, 10 and 20 dB SNR. Rooms: synthesised impulse responses (the
// direct path, then exponentially decaying Gaussian noise from 2 ms on, RT60 0.3 to 1.2 s, the
// tail at a direct-to-reverberant ratio of 0 dB). Each step runs as the worker runs it: `denoise` is
// @mixdown/repair's denoiseFile, `dereverb` the vocal split model's `reverb` stem (separateFile)
// subtracted with writeRemainder. Scored against the clean voice: SNR and SI-SDR (dB) before and
// after, and their improvement. Each run is `repairVocalFile`, the worker's and `mixdown repair`'s.
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs, promisify } from "node:util";
import { decodeToPcm, probeAudio } from "@mixdown/audio";
import type { VocalRepairStep } from "@mixdown/jobs";
import { ModelRegistry } from "@mixdown/separation";
import { readInstalledModels, type InstalledModel } from "@mixdown/separation/installed-models";
import { inProcessRunners } from "../src/in-process.ts";
import { RNNOISE_BUILD, repairVocalFile } from "../src/index.ts";

const run = promisify(execFile);
const { values } = parseArgs({
  options: { voices: { type: "string", default: "4" }, "models-dir": { type: "string", default: "models" } },
});
const RATE = 48_000;
const VOICES = [
  ["en-us", "Every voice has a story, and the room it was sung in tells part of it."],
  ["en-us+f3", "She sang the last verse again, quieter this time, close to the microphone."],
  ["en-gb+m3", "The take was good, but the fan in the corner never stopped humming."],
  ["en-us+f5", "Record it once more and keep the windows shut while we listen back."],
].slice(0, Number(values.voices));
const BABBLERS = [
  ["en-us+m1", "Somebody left the door open and the traffic came in with the wind."],
  ["en-gb+f2", "We should have booked the smaller studio for the vocals this week."],
  ["en-us+m7", "Turn the click track down, I can hear it bleeding into the headphones."],
  ["en-sc", "The coffee machine in the hall makes more noise than the drummer."],
];
const SNRS = [0, 5, 10, 20];
const RT60S = [0.3, 0.6, 0.9, 1.2];

/** A seeded uniform generator (mulberry32), so the set is the same on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function gaussian(next: () => number): () => number {
  return () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
}

const energy = (x: Float32Array) => x.reduce((sum, v) => sum + v * v, 0);

/** 10·log10(‖s‖² / ‖s − ŝ‖²). */
function snr(reference: Float32Array, estimate: Float32Array): number {
  let noise = 0;
  for (let i = 0; i < reference.length; i++) noise += (reference[i]! - estimate[i]!) ** 2;
  return 10 * Math.log10(energy(reference) / Math.max(noise, 1e-20));
}

/** Scale-invariant SDR (Le Roux et al. 2019): the estimate's part along the reference against the rest. */
function siSdr(reference: Float32Array, estimate: Float32Array): number {
  let dot = 0;
  for (let i = 0; i < reference.length; i++) dot += reference[i]! * estimate[i]!;
  const alpha = dot / energy(reference);
  let target = 0;
  let rest = 0;
  for (let i = 0; i < reference.length; i++) {
    const t = alpha * reference[i]!;
    target += t * t;
    rest += (estimate[i]! - t) ** 2;
  }
  return 10 * Math.log10(target / Math.max(rest, 1e-20));
}

/** In-place radix-2 FFT (re, im of a power-of-two length); `inverse` scales by 1/n. */
function fft(re: Float64Array, im: Float64Array, inverse = false): void {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      [re[i], re[j]] = [re[j]!, re[i]!];
      [im[i], im[j]] = [im[j]!, im[i]!];
    }
  }
  for (let size = 2; size <= n; size <<= 1) {
    const angle = ((inverse ? 2 : -2) * Math.PI) / size;
    const [wr, wi] = [Math.cos(angle), Math.sin(angle)];
    for (let start = 0; start < n; start += size) {
      let [cr, ci] = [1, 0];
      for (let k = 0; k < size / 2; k++) {
        const a = start + k;
        const b = a + size / 2;
        const tr = re[b]! * cr - im[b]! * ci;
        const ti = re[b]! * ci + im[b]! * cr;
        re[b] = re[a]! - tr;
        im[b] = im[a]! - ti;
        re[a] = re[a]! + tr;
        im[a] = im[a]! + ti;
        [cr, ci] = [cr * wr - ci * wi, cr * wi + ci * wr];
      }
    }
  }
  if (inverse) for (let i = 0; i < n; i++) ((re[i] = re[i]! / n), (im[i] = im[i]! / n));
}

/** x ∗ h, cut to x's length (the direct path at h[0] keeps it aligned with x). */
function convolve(x: Float32Array, h: Float32Array): Float32Array {
  let n = 1;
  while (n < x.length + h.length) n <<= 1;
  const [ar, ai, br, bi] = [new Float64Array(n), new Float64Array(n), new Float64Array(n), new Float64Array(n)];
  ar.set(x);
  br.set(h);
  fft(ar, ai);
  fft(br, bi);
  for (let i = 0; i < n; i++) [ar[i], ai[i]] = [ar[i]! * br[i]! - ai[i]! * bi[i]!, ar[i]! * bi[i]! + ai[i]! * br[i]!];
  fft(ar, ai, true);
  return Float32Array.from(ar.subarray(0, x.length));
}

/** A room: the direct path, then decaying noise (60 dB down after `rt60` s) whose energy equals the direct path's. */
function impulseResponse(rt60: number, seed: number): Float32Array {
  const length = Math.round(rt60 * RATE);
  const h = new Float32Array(length);
  const noise = gaussian(random(seed));
  const start = Math.round(0.002 * RATE);
  for (let i = start; i < length; i++) h[i] = noise() * Math.exp((-6.9078 * i) / (rt60 * RATE));
  const tail = energy(h);
  for (let i = start; i < length; i++) h[i] = h[i]! / Math.sqrt(tail);
  h[0] = 1;
  return h;
}

/** White or pink (Paul Kellet's filter over white) noise, seeded. */
function coloredNoise(color: "white" | "pink", length: number, seed: number): Float32Array {
  const white = gaussian(random(seed));
  const out = new Float32Array(length);
  let [b0, b1, b2, b3, b4, b5, b6] = [0, 0, 0, 0, 0, 0, 0];
  for (let i = 0; i < length; i++) {
    const w = white();
    if (color === "white") {
      out[i] = w;
      continue;
    }
    b0 = 0.99886 * b0 + w * 0.0555179;
    b1 = 0.99332 * b1 + w * 0.0750759;
    b2 = 0.969 * b2 + w * 0.153852;
    b3 = 0.8665 * b3 + w * 0.3104856;
    b4 = 0.55 * b4 + w * 0.5329522;
    b5 = -0.7616 * b5 - w * 0.016898;
    out[i] = b0 + b1 + b2 + b3 + b4 + b5 + b6 + w * 0.5362;
    b6 = w * 0.115926;
  }
  return out;
}

/** `signal + noise` with the noise scaled to `snrDb` below the signal. */
function mix(signal: Float32Array, noise: Float32Array, snrDb: number): Float32Array {
  const gain = Math.sqrt(energy(signal) / (energy(noise.subarray(0, signal.length)) * 10 ** (snrDb / 10)));
  return signal.map((v, i) => v + gain * noise[i % noise.length]!);
}

let dir: string;
let counter = 0;

/** Mono float32 WAV at 48 kHz. */
async function writeWav(samples: Float32Array): Promise<string> {
  const path = join(dir, `x${counter++}.wav`);
  const header = Buffer.alloc(44);
  header.write("RIFF", 0);
  header.writeUInt32LE(36 + samples.length * 4, 4);
  header.write("WAVEfmt ", 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(3, 20); // IEEE float
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(RATE, 24);
  header.writeUInt32LE(RATE * 4, 28);
  header.writeUInt16LE(4, 32);
  header.writeUInt16LE(32, 34);
  header.write("data", 36);
  header.writeUInt32LE(samples.length * 4, 40);
  await writeFile(path, Buffer.concat([header, Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength)]));
  return path;
}

/** A file's first channel at 48 kHz (Mixdown's outputs are stereo; a mono input's channels are equal). */
async function readMono(path: string): Promise<Float32Array> {
  const blocks: number[] = [];
  for await (const block of decodeToPcm(path, { sampleRate: RATE }))
    for (let i = 0; i < block.length; i += 2) blocks.push(block[i]!);
  return Float32Array.from(blocks);
}

/** espeak-ng speaking `text` with `voice`, resampled to 48 kHz mono (soxr), peak at -6 dBFS. */
async function speak(voice: string, text: string): Promise<Float32Array> {
  const raw = join(dir, `say${counter++}.wav`);
  await run("espeak-ng", ["-v", voice, "-s", "150", "-w", raw, text]);
  const { stdout } = await run(
    "ffmpeg",
    ["-v", "error", "-i", raw, "-af", `aresample=${RATE}:resampler=soxr`, "-ac", "1", "-f", "f32le", "-"],
    { encoding: "buffer", maxBuffer: 1 << 28 },
  );
  const buf = stdout as unknown as Buffer;
  const x = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  const peak = x.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  return x.map((v) => (v / peak) * 0.5);
}

let registry: ModelRegistry;
let installed: InstalledModel[];

/** The repair as the worker and `mixdown repair` run it (`repairVocalFile`), with `steps` in the order given. */
async function repair(input: string, steps: VocalRepairStep[]): Promise<string> {
  const out = join(dir, `out${counter++}.wav`);
  const workDir = join(dir, `work${counter++}`);
  await mkdir(workDir);
  const signal = new AbortController().signal;
  await repairVocalFile({
    inputPath: input,
    probe: await probeAudio(input),
    steps,
    isolateVocal: false,
    workDir,
    installed,
    models: { vocals: ["vocals"], vocalsEnsemble: "avg_wave", vocalSplit: "vocalsplit" },
    targets: [{ format: "wav", path: out }],
    runners: inProcessRunners(registry, signal),
    signal,
  });
  return out;
}

interface Row {
  group: string;
  condition: string;
  step: string;
  snrIn: number[];
  snrOut: number[];
  siIn: number[];
  siOut: number[];
}
const rows = new Map<string, Row>();

async function score(
  group: string,
  condition: string,
  step: string,
  clean: Float32Array,
  degraded: Float32Array,
  steps: VocalRepairStep[],
) {
  const out = (await readMono(await repair(await writeWav(degraded), steps))).subarray(0, clean.length);
  const key = `${group}|${condition}|${step}`;
  const row = rows.get(key) ?? { group, condition, step, snrIn: [], snrOut: [], siIn: [], siOut: [] };
  row.snrIn.push(snr(clean, degraded));
  row.snrOut.push(snr(clean, out));
  row.siIn.push(siSdr(clean, degraded));
  row.siOut.push(siSdr(clean, out));
  rows.set(key, row);
}

const mean = (x: number[]) => x.reduce((a, b) => a + b, 0) / x.length;
const f = (x: number) => (x >= 0 ? "+" : "") + x.toFixed(1);

async function main() {
  dir = await mkdtemp(join(tmpdir(), "mixdown-eval-repair-"));
  const modelsDir = resolve(values["models-dir"]!);
  registry = new ModelRegistry({ modelsDir });
  installed = (await readInstalledModels(modelsDir)).models;
  const started = performance.now();
  try {
    const voices = await Promise.all(VOICES.map(([v, t]) => speak(v!, t!)));
    const babblers = await Promise.all(BABBLERS.map(([v, t]) => speak(v!, t!)));
    const longest = Math.max(...babblers.map((b) => b.length));
    const babble = new Float32Array(longest);
    for (const b of babblers) for (let i = 0; i < longest; i++) babble[i] = babble[i]! + b[i % b.length]!;
    for (const [v, clean] of voices.entries()) {
      const noises = {
        white: coloredNoise("white", clean.length, 11 + v),
        pink: coloredNoise("pink", clean.length, 23 + v),
        babble,
      };
      for (const [name, noise] of Object.entries(noises))
        for (const db of SNRS) await score("noise", `${name}, ${db} dB`, "denoise", clean, mix(clean, noise, db), ["denoise"]);
      for (const rt60 of RT60S) {
        const wet = convolve(clean, impulseResponse(rt60, 101 + v));
        await score("reverb", `RT60 ${rt60} s`, "dereverb", clean, wet, ["dereverb"]);
        await score("reverb", `RT60 ${rt60} s`, "denoise", clean, wet, ["denoise"]);
      }
      const both = mix(convolve(clean, impulseResponse(0.6, 201 + v)), noises.pink, 10);
      const condition = "RT60 0.6 s + pink, 10 dB";
      await score("both", condition, "denoise", clean, both, ["denoise"]);
      await score("both", condition, "dereverb", clean, both, ["dereverb"]);
      await score("both", condition, "denoise, then dereverb", clean, both, ["denoise", "dereverb"]);
      await score("both", condition, "dereverb, then denoise (Mixdown's order)", clean, both, ["dereverb", "denoise"]);
    }
  } finally {
    await registry.close();
    await rm(dir, { recursive: true, force: true });
  }
  console.log(
    `vocal repair: ${VOICES.length} espeak-ng voices at 48 kHz; denoise = ${RNNOISE_BUILD}; dereverb = vocalsplit's reverb stem subtracted`,
  );
  console.log("| set | condition | step | SNR in | SNR out | ΔSNR | SI-SDR in | SI-SDR out | ΔSI-SDR |");
  console.log("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const r of rows.values()) {
    const [si, so, ii, io] = [mean(r.snrIn), mean(r.snrOut), mean(r.siIn), mean(r.siOut)];
    console.log(
      `| ${r.group} | ${r.condition} | ${r.step} | ${si.toFixed(1)} | ${so.toFixed(1)} | ${f(so - si)} | ${ii.toFixed(1)} | ${io.toFixed(1)} | ${f(io - ii)} |`,
    );
  }
  console.log(`(${((performance.now() - started) / 1000).toFixed(0)} s; dB, means over the voices)`);
}

await main();
