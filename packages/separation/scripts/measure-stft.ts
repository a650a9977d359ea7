/**
 * Measures the candidate STFT/iSTFT implementations of the MDX convention on
 * one chunk (hop 1024, dimT 256): the engine's MdxStft over PFFFT (WebAssembly
 * SIMD) and over the TypeScript mixed-radix FFT, and an ONNX graph (Pad + STFT
 * opset 17, DFT inverse + Col2Im opset 18) run by onnxruntime. Checks that they
 * agree, then prints ms per chunk (best of --reps).
 *
 *   tsx packages/separation/scripts/measure-stft.ts [--threads N] [--reps N]
 */
import { parseArgs } from "node:util";
import { ort } from "../src/ort.ts";
import { MdxStft } from "../src/families/mdx/stft.ts";
import { OnnxGraphBuilder } from "../testing/onnx-builder.ts";

const { values } = parseArgs({ options: { threads: { type: "string", default: "2" }, reps: { type: "string", default: "5" } } });
const threads = Number(values.threads);
const reps = Number(values.reps);

function hann(n: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / n));
}

function forwardGraph(s: MdxStft): Uint8Array {
  const { nFft, hopLength, dimF, dimT, chunkSize } = s;
  const half = nFft / 2;
  const g = new OnnxGraphBuilder();
  const wave = g.input("wave", ["batch", 2, chunkSize]);
  const flat = g.node("Reshape", [wave, g.int64Tensor([-1, chunkSize])]);
  const padded = g.node("Pad", [flat, g.int64Tensor([0, half, 0, half])], { mode: "reflect" });
  const signal = g.node("Unsqueeze", [padded, g.int64Tensor([2])]);
  const stft = g.node(
    "STFT",
    [signal, g.int64Tensor([hopLength], []), g.floatTensor(hann(nFft), [nFft]), g.int64Tensor([nFft], [])],
    { onesided: 1 },
  );
  const bins = g.node("Slice", [stft, g.int64Tensor([0]), g.int64Tensor([dimF]), g.int64Tensor([2])]);
  const planes = g.node("Transpose", [bins], { perm: [0, 3, 2, 1] });
  const spec = g.node("Reshape", [planes, g.int64Tensor([-1, 4, dimF, dimT])]);
  const mask = Float32Array.from({ length: dimF }, (_, k) => (k < 3 ? 0 : 1));
  g.node("Mul", [spec, g.floatTensor(mask, [1, 1, dimF, 1])], {}, "spec");
  g.output("spec", ["batch", 4, dimF, dimT]);
  return g.encode(18);
}

function inverseGraph(s: MdxStft): Uint8Array {
  const { nFft, hopLength, dimF, dimT, chunkSize, keptSize } = s;
  const bins = nFft / 2 + 1;
  const g = new OnnxGraphBuilder();
  const spec = g.input("spec", ["batch", 4, dimF, dimT]);
  const pairs = g.node("Reshape", [spec, g.int64Tensor([-1, 2, dimF, dimT])]);
  const frames = g.node("Transpose", [pairs], { perm: [0, 3, 2, 1] });
  const full = g.node("Pad", [frames, g.int64Tensor([0, 0, 0, 0, 0, 0, bins - dimF, 0])]);
  const time = g.node("DFT", [full, g.int64Tensor([nFft], [])], { axis: 2, inverse: 1, onesided: 1 });
  const real = g.node("Slice", [time, g.int64Tensor([0]), g.int64Tensor([1]), g.int64Tensor([3])]);
  const window = hann(nFft);
  const windowed = g.node("Mul", [g.node("Reshape", [real, g.int64Tensor([-1, dimT, nFft])]), g.floatTensor(window, [nFft])]);
  const columns = g.node("Transpose", [windowed], { perm: [0, 2, 1] });
  const paddedLength = chunkSize + nFft;
  const image = g.node("Col2Im", [columns, g.int64Tensor([1, paddedLength]), g.int64Tensor([1, nFft])], {
    strides: [1, hopLength],
  });
  const envelope = new Float32Array(paddedLength);
  for (let t = 0; t < dimT; t++) for (let n = 0; n < nFft; n++) envelope[t * hopLength + n] += window[n] * window[n];
  const kept = g.node("Slice", [
    g.node("Reshape", [image, g.int64Tensor([-1, paddedLength])]),
    g.int64Tensor([nFft]),
    g.int64Tensor([chunkSize]),
    g.int64Tensor([1]),
  ]);
  const inverse = Float32Array.from(envelope.subarray(nFft, chunkSize), (e) => 1 / e);
  const normalised = g.node("Mul", [kept, g.floatTensor(inverse, [keptSize])]);
  g.node("Reshape", [normalised, g.int64Tensor([-1, 2, keptSize])], {}, "wave");
  g.output("wave", ["batch", 2, keptSize]);
  return g.encode(18);
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

const configs = [
  { nFft: 4096, dimF: 1024 },
  { nFft: 4096, dimF: 2048 },
  { nFft: 6144, dimF: 2048 },
  { nFft: 7680, dimF: 3072 },
];
const sessionOptions: ort.InferenceSession.SessionOptions = {
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  graphOptimizationLevel: "all",
};
console.log(`ms per chunk of 255 hops (5.92 s at 44.1 kHz), analysis + synthesis, best of ${reps}; ONNX with ${threads} threads`);
console.log("| n_fft | dim_f | PFFFT (wasm SIMD) | TypeScript FFT | ONNX graph | max diff TS vs ONNX |");
console.log("|---|---|---|---|---|---|");
for (const { nFft, dimF } of configs) {
  const geometry = { nFft, hopLength: 1024, dimF, dimT: 256 };
  const fast = await MdxStft.create(geometry);
  const js = await MdxStft.create(geometry, { fft: "js" });
  const forward = await ort.InferenceSession.create(forwardGraph(fast), sessionOptions);
  const inverse = await ort.InferenceSession.create(inverseGraph(fast), sessionOptions);
  const wave = new Float32Array(2 * fast.chunkSize);
  for (let i = 0; i < wave.length; i++) wave[i] = Math.sin(i * 0.01) * 0.3 + (Math.random() - 0.5) * 0.2;
  const left = wave.subarray(0, fast.chunkSize);
  const right = wave.subarray(fast.chunkSize);
  const spec = new Float32Array(fast.specSize);
  const outLeft = new Float32Array(fast.keptSize);
  const outRight = new Float32Array(fast.keptSize);
  const best = { fast: Infinity, js: Infinity, onnx: Infinity };
  let diff = 0;
  for (let r = 0; r < reps; r++) {
    for (const [name, stft] of [
      ["fast", fast],
      ["js", js],
    ] as const) {
      const t0 = performance.now();
      stft.analyze(left, right, 0, spec, 0);
      stft.synthesize(spec, 0, outLeft, outRight, 0);
      best[name] = Math.min(best[name], performance.now() - t0);
    }
    const t0 = performance.now();
    const out = await forward.run({ wave: new ort.Tensor("float32", wave, [1, 2, fast.chunkSize]) });
    const back = await inverse.run({ spec: new ort.Tensor("float32", out.spec.data as Float32Array, [1, 4, dimF, 256]) });
    best.onnx = Math.min(best.onnx, performance.now() - t0);
    js.analyze(left, right, 0, spec, 0);
    const scale = (out.spec.data as Float32Array).reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    diff = maxAbsDiff(out.spec.data as Float32Array, spec) / scale;
    js.synthesize(spec, 0, outLeft, outRight, 0);
    diff = Math.max(diff, maxAbsDiff((back.wave.data as Float32Array).subarray(fast.keptSize), outRight));
  }
  console.log(
    `| ${nFft} | ${dimF} | ${best.fast.toFixed(1)} | ${best.js.toFixed(1)} | ${best.onnx.toFixed(1)} | ${diff.toExponential(1)} |`,
  );
}
