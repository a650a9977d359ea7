import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MdxStft, type MdxStftConfig } from "../src/families/mdx/stft.ts";

/** torch.stft(center=True, reflect, hann periodic), naive DFT, laid out [4, dimF, dimT]. */
function referenceStft(cfg: MdxStftConfig, left: Float32Array, right: Float32Array): Float64Array {
  const { nFft, hopLength, dimF, dimT } = cfg;
  const out = new Float64Array(4 * dimF * dimT);
  const n = left.length;
  const pad = nFft / 2;
  for (const [c, x] of [left, right].entries()) {
    for (let t = 0; t < dimT; t++) {
      for (let k = 0; k < dimF; k++) {
        let re = 0;
        let im = 0;
        for (let m = 0; m < nFft; m++) {
          let i = t * hopLength + m - pad;
          if (i < 0) i = -i;
          if (i >= n) i = 2 * (n - 1) - i;
          const w = 0.5 - 0.5 * Math.cos((2 * Math.PI * m) / nFft);
          const a = (-2 * Math.PI * ((k * m) % nFft)) / nFft;
          re += x[i] * w * Math.cos(a);
          im += x[i] * w * Math.sin(a);
        }
        out[(2 * c * dimF + k) * dimT + t] = k < 3 ? 0 : re;
        out[((2 * c + 1) * dimF + k) * dimT + t] = k < 3 ? 0 : im;
      }
    }
  }
  return out;
}

/** torch.istft(center=True) of the [4, dimF, dimT] spectrum with bins ≥ dimF zero, kept region only. */
function referenceIstft(cfg: MdxStftConfig, spec: Float32Array): { left: Float64Array; right: Float64Array } {
  const { nFft, hopLength, dimF, dimT } = cfg;
  const length = hopLength * (dimT - 1) + nFft;
  const result = [new Float64Array(length), new Float64Array(length)];
  const envelope = new Float64Array(length);
  for (let t = 0; t < dimT; t++) {
    for (let m = 0; m < nFft; m++) {
      const w = 0.5 - 0.5 * Math.cos((2 * Math.PI * m) / nFft);
      envelope[t * hopLength + m] += w * w;
      for (let c = 0; c < 2; c++) {
        // irfft: DC and Nyquist real parts only, other bins counted twice
        let v = 0;
        for (let k = 0; k < dimF && k <= nFft / 2; k++) {
          const re = spec[(2 * c * dimF + k) * dimT + t];
          const im = spec[((2 * c + 1) * dimF + k) * dimT + t];
          const a = (2 * Math.PI * ((k * m) % nFft)) / nFft;
          const edge = k === 0 || k === nFft / 2;
          v += edge ? re * Math.cos(a) : 2 * (re * Math.cos(a) - im * Math.sin(a));
        }
        result[c][t * hopLength + m] += (v / nFft) * w;
      }
    }
  }
  const kept = hopLength * (dimT - 1) - nFft;
  const from = nFft; // nFft/2 of center padding + nFft/2 of trim
  const pick = (x: Float64Array) => Float64Array.from({ length: kept }, (_, i) => x[from + i] / envelope[from + i]);
  return { left: pick(result[0]), right: pick(result[1]) };
}

function signal(n: number, seed: number): Float32Array {
  return Float32Array.from(
    { length: n },
    (_, i) =>
      0.4 * Math.sin(i * 0.37 * seed) + 0.3 * Math.cos(i * 0.051 * seed + 1) + (((i * 7919 + seed) % 17) / 17 - 0.5) * 0.2,
  );
}

const configs: (MdxStftConfig & { label: string })[] = [
  { label: "n_fft 24 (TypeScript FFT), full band", nFft: 24, hopLength: 6, dimF: 13, dimT: 11 },
  { label: "n_fft 30 (TypeScript FFT), cut band, hop not dividing n_fft", nFft: 30, hopLength: 7, dimF: 9, dimT: 12 },
  { label: "n_fft 256 (PFFFT), cut band", nFft: 256, hopLength: 64, dimF: 40, dimT: 9 },
  { label: "n_fft 96 (PFFFT, 2^5·3), full band", nFft: 96, hopLength: 24, dimF: 49, dimT: 10 },
];

describe("MdxStft", () => {
  for (const cfg of configs) {
    it(`analyses like torch.stft into [L.re, L.im, R.re, R.im] with bins 0-2 zeroed: ${cfg.label}`, async () => {
      const stft = await MdxStft.create(cfg);
      const left = signal(stft.chunkSize, 1);
      const right = signal(stft.chunkSize, 2);
      const padded = (x: Float32Array) => Float32Array.from([...new Array(5).fill(9), ...x]);
      const spec = new Float32Array(stft.specSize + 3).fill(7);
      stft.analyze(padded(left), padded(right), 5, spec, 3);
      const ref = referenceStft(cfg, left, right);
      const scale = Math.max(...ref.map(Math.abs));
      for (let i = 0; i < ref.length; i++)
        assert.ok(Math.abs(spec[3 + i] - ref[i]) / scale < 1e-5, `value ${i}: ${spec[3 + i]} vs ${ref[i]}`);
      assert.deepEqual([...spec.subarray(0, 3)], [7, 7, 7], "writes only its own range");
    });

    it(`synthesises like torch.istft with high bins zeroed and n_fft/2 trimmed per side: ${cfg.label}`, async () => {
      const stft = await MdxStft.create(cfg);
      const spec = Float32Array.from({ length: stft.specSize }, (_, i) => Math.sin(i * 0.7) * (1 + (i % 5)));
      const ref = referenceIstft(cfg, spec);
      const left = new Float32Array(stft.keptSize + 4);
      const right = new Float32Array(stft.keptSize + 4);
      stft.synthesize(spec, 0, left, right, 4);
      const scale = Math.max(...ref.left.map(Math.abs), ...ref.right.map(Math.abs));
      for (let i = 0; i < stft.keptSize; i++) {
        assert.ok(Math.abs(left[4 + i] - ref.left[i]) / scale < 1e-5, `left ${i}`);
        assert.ok(Math.abs(right[4 + i] - ref.right[i]) / scale < 1e-5, `right ${i}`);
      }
    });
  }

  // Frames 1 and dimT−2 reach one hop into the kept part and hold reflect-padded
  // samples, whose low-bin content is zeroed: that hop is inexact by design
  // (the overlap-add weights it near zero), the rest is exact.
  it("reconstructs the kept part of a chunk beyond its first and last hop at >100 dB", async () => {
    const cfg = { nFft: 4096, hopLength: 1024, dimF: 2049, dimT: 32 };
    // a periodic Hann leaks a bin-centred tone into its two neighbours only
    const bin = (k: number) => (k * 44100) / 4096;
    for (const fft of ["auto", "js"] as const) {
      const stft = await MdxStft.create(cfg, { fft });
      const x = Float32Array.from(
        { length: stft.chunkSize },
        (_, i) => 0.5 * Math.sin((2 * Math.PI * bin(41) * i) / 44100) + 0.2 * Math.sin((2 * Math.PI * bin(465) * i) / 44100),
      );
      const spec = new Float32Array(stft.specSize);
      stft.analyze(x, x, 0, spec, 0);
      const left = new Float32Array(stft.keptSize);
      const right = new Float32Array(stft.keptSize);
      stft.synthesize(spec, 0, left, right, 0);
      let noise = 0;
      let power = 0;
      for (let i = cfg.hopLength; i < stft.keptSize - cfg.hopLength; i++) {
        power += x[stft.trim + i] ** 2;
        noise += (left[i] - x[stft.trim + i]) ** 2 + (right[i] - x[stft.trim + i]) ** 2;
      }
      assert.ok(
        10 * Math.log10((2 * power) / noise) > 100,
        `${stft.fft.implementation}: ${10 * Math.log10((2 * power) / noise)} dB`,
      );
    }
  });

  it("rejects a geometry whose chunk is all trim", () => {
    assert.throws(() => new MdxStft({ nFft: 64, hopLength: 16, dimF: 33, dimT: 4 }), /nothing left after trimming/);
  });
});
