import onnxProto from "onnx-proto";

const { onnx } = onnxProto;
const T = onnx.TensorProto.DataType;

export interface SyntheticVoiceOptions {
  /** Seeds the random weights: two seeds, two different voices of one architecture. */
  seed: number;
  /** Rows of the speaker-embedding table `emb_g.weight` ([speakers, 256]). */
  speakers?: number;
  /** Adds unused RVC v2-named generator weights until they hold at least this many bytes. */
  fillBytes?: number;
  /** metadata_props of the model (e.g. { architecture: "rvc", sample_rate: "40000" }). */
  metadata?: Record<string, string>;
  /** Overrides the shape of one weight (to make an incompatible model). */
  reshape?: { name: string; dims: number[] };
  /** Value of the int64 reshape target (non-float initializer); default [1, 1, -1]. */
  audioShape?: number[];
}

/**
 * A model with RVC v2's ONNX signature (phone [1,T,768], phone_lengths [1], pitch [1,T],
 * pitchf [1,T], ds [1], rnd [1,192,T] -> audio [1,1,T]) whose small graph really runs in
 * onnxruntime: a speaker table read by Gather(ds), float32 matrices, one float16 gain and one
 * int64 constant. Not a voice: a fixture for blending, loading and benchmarking.
 */
export function makeSyntheticVoice(options: SyntheticVoiceOptions): Uint8Array {
  let state = options.seed * 2654435761 + 1;
  const random = () => {
    // mulberry32
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
  const initializers: onnxProto.onnx.ITensorProto[] = [];
  const float = (name: string, dims: number[], scale = 0.1) => {
    const shape = options.reshape?.name === name ? options.reshape.dims : dims;
    const values = new Float32Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < values.length; i++) values[i] = random() * scale;
    initializers.push({ name, dims: shape, dataType: T.FLOAT, rawData: new Uint8Array(values.buffer) });
    return name;
  };
  const speakers = options.speakers ?? 4;
  float("emb_g.weight", [speakers, 256]);
  float("spk_proj.weight", [256, 192]);
  float("enc_p.emb_phone.weight", [768, 192]);
  float("enc_p.emb_pitch.weight", [256, 192]);
  float("dec.conv_post.weight", [192, 1]);
  float("dec.f0_gain", [1], 0.001);
  const gain = Float16Array.of(0.5 + random());
  initializers.push({ name: "dec.gain_fp16", dims: [1], dataType: T.FLOAT16, rawData: new Uint8Array(gain.buffer) });
  const audioShape = BigInt64Array.from((options.audioShape ?? [1, 1, -1]).map(BigInt));
  initializers.push({ name: "audio_shape", dims: [3], dataType: T.INT64, rawData: new Uint8Array(audioShape.buffer) });

  if (options.fillBytes) {
    let filled = 0;
    for (let block = 0; filled < options.fillBytes; block++) {
      const layer = RVC_LAYERS[block % RVC_LAYERS.length]!;
      float(`${layer.name}.${Math.floor(block / RVC_LAYERS.length)}.weight`, layer.dims, 0.05);
      float(`${layer.name}.${Math.floor(block / RVC_LAYERS.length)}.bias`, [layer.dims[0]!], 0.01);
      filled += 4 * (layer.dims.reduce((x, y) => x * y, 1) + layer.dims[0]!);
    }
  }

  const node = (opType: string, input: string[], output: string, attribute: onnxProto.onnx.IAttributeProto[] = []) => ({
    opType,
    input,
    output: [output],
    name: `${opType}_${output}`,
    attribute,
  });
  const nodes = [
    node("Gather", ["emb_g.weight", "ds"], "g"),
    node("MatMul", ["g", "spk_proj.weight"], "g_proj"),
    node("MatMul", ["phone", "enc_p.emb_phone.weight"], "h"),
    node("Gather", ["enc_p.emb_pitch.weight", "pitch"], "p"),
    node("Add", ["h", "p"], "hp"),
    node("Add", ["hp", "g_proj"], "x"),
    node("Transpose", ["rnd"], "noise", [{ name: "perm", type: onnx.AttributeProto.AttributeType.INTS, ints: [0, 2, 1] }]),
    node("Add", ["x", "noise"], "xn"),
    node("MatMul", ["xn", "dec.conv_post.weight"], "y"),
    node("Unsqueeze", ["pitchf", "unsqueeze_axes"], "f0"),
    node("Mul", ["f0", "dec.f0_gain"], "f0_term"),
    node("Add", ["y", "f0_term"], "yf"),
    node("Cast", ["dec.gain_fp16"], "gain", [{ name: "to", type: onnx.AttributeProto.AttributeType.INT, i: T.FLOAT }]),
    node("Mul", ["yf", "gain"], "yg"),
    node("Tanh", ["yg"], "yt"),
    node("Reshape", ["yt", "audio_shape"], "audio"),
  ];
  initializers.push({
    name: "unsqueeze_axes",
    dims: [1],
    dataType: T.INT64,
    rawData: new Uint8Array(BigInt64Array.of(2n).buffer),
  });
  const io = (name: string, elemType: number, dims: Array<number | string>) => ({
    name,
    type: {
      tensorType: { elemType, shape: { dim: dims.map((d) => (typeof d === "number" ? { dimValue: d } : { dimParam: d })) } },
    },
  });
  const model = onnx.ModelProto.fromObject({
    irVersion: 8,
    producerName: "mixdown-onnx-blend-tests",
    opsetImport: [{ domain: "", version: 17 }],
    metadataProps: Object.entries(options.metadata ?? {}).map(([key, value]) => ({ key, value })),
    graph: {
      name: "rvc_v2_synthetic",
      node: nodes,
      initializer: initializers,
      input: [
        io("phone", T.FLOAT, [1, "T", 768]),
        io("phone_lengths", T.INT64, [1]),
        io("pitch", T.INT64, [1, "T"]),
        io("pitchf", T.FLOAT, [1, "T"]),
        io("ds", T.INT64, [1]),
        io("rnd", T.FLOAT, [1, 192, "T"]),
      ],
      output: [io("audio", T.FLOAT, [1, 1, "N"])],
    },
  });
  return onnx.ModelProto.encode(model).finish();
}

/** RVC v2 generator weights (names and shapes as in a 40 kHz export), cycled to reach a size. */
const RVC_LAYERS: Array<{ name: string; dims: number[] }> = [
  { name: "enc_p.encoder.attn_layers.conv_q", dims: [192, 192, 1] },
  { name: "enc_p.encoder.attn_layers.conv_k", dims: [192, 192, 1] },
  { name: "enc_p.encoder.attn_layers.conv_v", dims: [192, 192, 1] },
  { name: "enc_p.encoder.attn_layers.conv_o", dims: [192, 192, 1] },
  { name: "enc_p.encoder.ffn_layers.conv_1", dims: [768, 192, 3] },
  { name: "enc_p.encoder.ffn_layers.conv_2", dims: [192, 768, 3] },
  { name: "dec.ups", dims: [256, 512, 16] },
  { name: "dec.resblocks.convs1", dims: [256, 256, 3] },
  { name: "dec.resblocks.convs2", dims: [256, 256, 7] },
  { name: "flow.flows.enc.in_layers", dims: [384, 192, 5] },
  { name: "flow.flows.enc.res_skip_layers", dims: [384, 192, 1] },
  { name: "dec.noise_convs", dims: [128, 1, 12] },
];

/** Inputs for one run of a synthetic (or real RVC v2) model over `frames` frames. */
export function syntheticInputs(frames: number) {
  const phone = new Float32Array(frames * 768).map((_, i) => Math.sin(i * 0.37) * 0.5);
  const pitch = BigInt64Array.from({ length: frames }, (_, i) => BigInt(1 + ((i * 7) % 255)));
  const pitchf = Float32Array.from({ length: frames }, (_, i) => 100 + i);
  const rnd = new Float32Array(192 * frames).map((_, i) => Math.cos(i * 0.11) * 0.1);
  return {
    phone: { data: phone, dims: [1, frames, 768] },
    phone_lengths: { data: BigInt64Array.of(BigInt(frames)), dims: [1] },
    pitch: { data: pitch, dims: [1, frames] },
    pitchf: { data: pitchf, dims: [1, frames] },
    ds: { data: BigInt64Array.of(0n), dims: [1] },
    rnd: { data: rnd, dims: [1, 192, frames] },
  };
}
