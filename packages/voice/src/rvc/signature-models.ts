import { INT64, OnnxGraph } from "../onnx-graph.ts";

/** Deterministic pseudo-random weights (tests and measurements must not depend on Math.random). */
function randomWeights(count: number, scale: number, seed: number): Float32Array {
  const out = new Float32Array(count);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = (((s >>> 0) / 4294967296) * 2 - 1) * scale;
  }
  return out;
}

/**
 * An ONNX file with the ContentVec (vec-768-layer-12) export's signature: `source` [1,1,N] at
 * 16 kHz -> `embed` [1,T,768] (`width` 256: vec-256-layer-9's), one frame per 320 samples. Random weights, tiny hidden size: it
 * proves the plumbing, not the voice.
 */
export function writeContentVecSignatureModel(seed = 1, width = 768): Uint8Array {
  const g = new OnnxGraph();
  const source = g.input("source", [1, 1, "samples"]);
  const hidden = 8;
  const conv = g.node("Conv", [source, g.float(randomWeights(hidden * 400, 0.05, seed), [hidden, 1, 400])], {
    kernel_shape: [400],
    strides: [320],
  });
  const frames = g.node("Transpose", [g.node("Tanh", [conv])], { perm: [0, 2, 1] });
  g.node("MatMul", [frames, g.float(randomWeights(hidden * width, 0.5, seed + 1), [hidden, width])], {}, "embed");
  g.output("embed", [1, "frames", width]);
  return g.encode({}, 17);
}

/**
 * An ONNX file with the RVC v2 (f0) export's exact signature: `phone` [1,T,768] float32,
 * `phone_lengths` [1] int64, `pitch` [1,T] int64, `pitchf` [1,T] float32, `ds` [1] int64, `rnd`
 * [1,192,T] float32 -> `audio` [1,1,T·hop] at `sampleRate` (hop = sampleRate/100). Every input
 * feeds the output; the dominant part is a sine following `pitchf`, so a test can check that f0
 * and pitch shift reach the model and that lengths and rates line up.
 */
export function writeRvcSignatureModel(sampleRate: 40000 | 48000 | 32000 = 40000, seed = 7): Uint8Array {
  const hop = sampleRate / 100;
  const g = new OnnxGraph();
  const phone = g.input("phone", [1, "frames", 768]);
  const phoneLengths = g.input("phone_lengths", [1], INT64);
  const pitch = g.input("pitch", [1, "frames"], INT64);
  const pitchf = g.input("pitchf", [1, "frames"]);
  const ds = g.input("ds", [1], INT64);
  const rnd = g.input("rnd", [1, 192, "frames"]);

  const ones = g.float(new Float32Array(hop).fill(1), [1, 1, hop]);
  const perFrame = (x: string) => g.node("Mul", [g.node("Unsqueeze", [x, g.int64([2])]), ones]); // [1,T,1] -> [1,T,hop]
  const flat = (x: string) => g.node("Reshape", [x, g.int64([1, -1])]);

  const phase = g.node("CumSum", [flat(perFrame(pitchf)), g.int64([1], [])]);
  const sine = g.node("Mul", [
    g.node("Sin", [g.node("Mul", [phase, g.float([(2 * Math.PI) / sampleRate], [])])]),
    g.float([0.3], []),
  ]);

  const content = g.node("Tanh", [g.node("MatMul", [phone, g.float(randomWeights(768 * hop, 0.01, seed), [768, hop])])]);
  const noise = g.node("MatMul", [
    g.node("Transpose", [rnd], { perm: [0, 2, 1] }),
    g.float(randomWeights(192 * hop, 0.001, seed + 1), [192, hop]),
  ]);
  const speaker = g.node("Gather", [g.float(randomWeights(4 * hop, 0.001, seed + 2), [4, hop]), ds], { axis: 0 });
  const coarse = g.node("Mul", [perFrame(g.node("Cast", [pitch], { to: 1 })), g.float([1e-6], [])]);
  const length = g.node("Mul", [g.node("Cast", [phoneLengths], { to: 1 }), g.float([0], [])]);
  let extra = g.node("Add", [g.node("Mul", [content, g.float([0.01], [])]), noise]);
  extra = g.node("Add", [g.node("Add", [extra, speaker]), coarse]);
  const mixed = g.node("Add", [g.node("Add", [sine, flat(extra)]), length]);
  g.node("Reshape", [mixed, g.int64([1, 1, -1])], {}, "audio");
  g.output("audio", [1, 1, "samples"]);
  return g.encode({ "rvc.sample_rate": String(sampleRate) }, 17);
}
