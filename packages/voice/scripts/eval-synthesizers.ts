// Which base synthesizer should TTS jobs speak with? Both candidates Debian ships are run on the
// same ten Harvard sentences (IEEE 1969 list 1), through synthesizeSpeech as the worker runs it,
// and measured at 16 kHz on what the voice conversion after them depends on:
//   voiced   share of 10 ms frames where YIN finds a pitch
//   f0 sd    spread of the pitch over voiced frames, in semitones (intonation; a monotone is ~1)
//   |Δf0|    median pitch change between consecutive voiced frames, in cents (smoothness)
//   jumps    share of consecutive voiced frame pairs whose pitch moves more than 300 cents
//            (octave errors and steps: what makes a converted voice crack)
//   flatness mean spectral flatness (Wiener entropy, 62 Hz–8 kHz) of voiced frames: lower is a
//            clearer harmonic structure, higher is buzz or noise
//   rtf      synthesis time / audio time (one text2wave or espeak-ng run per piece)
//   ./mixdown.sh eval:synthesizers
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ComplexFft } from "@mixdown/separation/fft";
import { hann } from "../src/dsp/window.ts";
import { readMono, trackPitch } from "../src/index.ts";
import { synthesizeSpeech, type SynthesizerName } from "../src/speech.ts";

const SENTENCES = [
  "The birch canoe slid on the smooth planks.",
  "Glue the sheet to the dark blue background.",
  "It's easy to tell the depth of a well.",
  "These days a chicken leg is a rare dish.",
  "Rice is often served in round bowls.",
  "The juice of lemons makes fine punch.",
  "The box was thrown beside the parked truck.",
  "The hogs were fed chopped corn and garbage.",
  "Four hours of steady work faced us.",
  "A large size in stockings is hard to sell.",
];
const RATE = 16000;
const HOP = 160;
const FRAME = 512;

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : NaN;
}

function measure(signal: Float32Array) {
  const f0 = trackPitch(signal, RATE, { hop: HOP });
  const voiced = [...f0].filter((v) => v > 0);
  const semis = voiced.map((v) => 12 * Math.log2(v / 100));
  const mean = semis.reduce((a, b) => a + b, 0) / semis.length;
  const sd = Math.sqrt(semis.reduce((a, b) => a + (b - mean) ** 2, 0) / semis.length);
  const steps: number[] = [];
  for (let i = 1; i < f0.length; i++)
    if (f0[i]! > 0 && f0[i - 1]! > 0) steps.push(Math.abs(1200 * Math.log2(f0[i]! / f0[i - 1]!)));
  const fft = new ComplexFft(FRAME);
  const re = new Float64Array(FRAME);
  const im = new Float64Array(FRAME);
  const window = hann(FRAME);
  const flatness: number[] = [];
  for (let i = 0; i < f0.length; i++) {
    if (!(f0[i]! > 0)) continue;
    const start = i * HOP - FRAME / 2;
    if (start < 0 || start + FRAME > signal.length) continue;
    for (let k = 0; k < FRAME; k++) {
      re[k] = signal[start + k]! * window[k]!;
      im[k] = 0;
    }
    fft.forward(re, im);
    let logSum = 0;
    let sum = 0;
    const bins = FRAME / 2 - 2;
    for (let k = 2; k < FRAME / 2; k++) {
      const p = re[k]! ** 2 + im[k]! ** 2 + 1e-12;
      logSum += Math.log(p);
      sum += p;
    }
    flatness.push(Math.exp(logSum / bins) / (sum / bins));
  }
  return {
    voiced: voiced.length / f0.length,
    f0Sd: sd,
    medianStepCents: median(steps),
    jumps: steps.filter((s) => s > 300).length / steps.length,
    flatness: flatness.reduce((a, b) => a + b, 0) / flatness.length,
  };
}

const dir = await mkdtemp(join(tmpdir(), "mixdown-eval-synth-"));
try {
  console.log("synthesizer   voiced  f0 sd (st)  |Δf0| (cents)  jumps>300c  flatness  rtf");
  for (const synthesizer of ["festival", "espeak-ng"] as SynthesizerName[]) {
    const totals = { voiced: 0, f0Sd: 0, medianStepCents: 0, jumps: 0, flatness: 0 };
    let synthSeconds = 0;
    let audioSeconds = 0;
    for (const [i, sentence] of SENTENCES.entries()) {
      const out = join(dir, `${synthesizer}-${i}.wav`);
      const t0 = performance.now();
      const spoken = await synthesizeSpeech(sentence, out, { synthesizer, workDir: dir, sampleRate: RATE });
      synthSeconds += (performance.now() - t0) / 1000;
      audioSeconds += spoken.seconds;
      const m = measure(await readMono(out, RATE));
      for (const key of Object.keys(totals) as Array<keyof typeof totals>) totals[key] += m[key] / SENTENCES.length;
    }
    console.log(
      `${synthesizer.padEnd(12)}  ${(totals.voiced * 100).toFixed(0).padStart(5)}%  ${totals.f0Sd.toFixed(2).padStart(10)}  ${totals.medianStepCents.toFixed(1).padStart(13)}  ${(totals.jumps * 100).toFixed(2).padStart(9)}%  ${totals.flatness.toFixed(3).padStart(8)}  ${(synthSeconds / audioSeconds).toFixed(2)}`,
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
