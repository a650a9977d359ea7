// The excitation of RVC's NSF decoder (its SineGen with one harmonic), computed outside the ONNX
// graph: the phase is a running sum over every output sample, which PyTorch accumulates in double
// and ONNX runtimes in float32 (35 dB off over a few seconds). Here the sums are in double and the
// other steps round to float32 where PyTorch does, so the result is RVC's to float precision.

const f32 = Math.fround;
const SINE_AMP = f32(0.1);
const VOICED_NOISE = f32(0.003);
const UNVOICED_NOISE = f32(0.1 / 3);
const TWO_PI_F32 = f32(Math.PI);

/**
 * RVC's `SineGen(sr, harmonic_num=0)(f0, upp)` output, [frames·hop]: a sine at f0 (amplitude 0.1)
 * where f0 > 0 plus noise (0.003 where voiced, 0.1/3 where not) times `noise`, the N(0,1) draws
 * RVC's `randn_like` makes (one per output sample). `f0` in Hz per frame, `hop` output samples
 * per frame (the product of the decoder's upsampling rates).
 */
export function nsfSource(f0: Float32Array, sampleRate: number, hop: number, noise: Float32Array): Float32Array {
  const frames = f0.length;
  const length = frames * hop;
  if (noise.length < length) throw new RangeError(`nsfSource needs ${length} noise values, got ${noise.length}`);
  // Per frame: the phase step (cycles per sample, wrapped to [0, 1)), and its running sum × hop.
  const step = new Float32Array(frames);
  const cycles = new Float32Array(frames);
  let running = 0;
  for (let t = 0; t < frames; t++) {
    const r = f32(f0[t]! / sampleRate);
    step[t] = f32(r - Math.floor(r));
    running += step[t]!;
    cycles[t] = f32(f32(running) * hop);
  }
  // The running sum linearly interpolated to the output rate (align_corners), wrapped to [0, 1):
  // where it wraps, RVC subtracts one cycle from the per-sample phase sum, keeping it small.
  const scale = length > 1 ? f32(f32(frames - 1) / f32(length - 1)) : 0;
  const out = new Float32Array(length);
  let previous = 0;
  let phase = 0;
  for (let i = 0; i < length; i++) {
    const real = f32(scale * i);
    const i0 = Math.min(Math.floor(real), frames - 1);
    const i1 = i0 < frames - 1 ? i0 + 1 : i0;
    const lambda = f32(Math.min(Math.max(f32(real - i0), 0), 1));
    const interpolated = f32(f32(cycles[i0]! * f32(1 - lambda)) + f32(cycles[i1]! * lambda));
    const wrapped = f32(interpolated - Math.floor(interpolated));
    const shift = i > 0 && f32(wrapped - previous) < 0 ? -1 : 0;
    previous = wrapped;
    const t = Math.floor(i / hop);
    phase += f32(step[t]! + shift);
    const sine = f32(f32(Math.sin(f32(f32(f32(phase) * 2) * TWO_PI_F32))) * SINE_AMP);
    const voiced = f0[t]! > 0;
    const amp = voiced ? VOICED_NOISE : UNVOICED_NOISE;
    out[i] = f32((voiced ? sine : 0) + f32(amp * noise[i]!));
  }
  return out;
}
