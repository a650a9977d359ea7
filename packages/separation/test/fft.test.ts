import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ComplexFft } from "../src/fft.ts";
import { createRealFft, JsRealFft, pffftSupports } from "../src/real-fft.ts";

function naiveDft(re: Float64Array, im: Float64Array, bins: number[]): { re: number; im: number }[] {
  const n = re.length;
  return bins.map((k) => {
    let sr = 0;
    let si = 0;
    for (let t = 0; t < n; t++) {
      const a = (-2 * Math.PI * ((k * t) % n)) / n;
      sr += re[t] * Math.cos(a) - im[t] * Math.sin(a);
      si += re[t] * Math.sin(a) + im[t] * Math.cos(a);
    }
    return { re: sr, im: si };
  });
}

function random(n: number): Float64Array {
  return Float64Array.from({ length: n }, (_, i) => Math.sin(i * 1.7) * 0.5 + ((i * 7919) % 13) / 13 - 0.5);
}

describe("ComplexFft", () => {
  for (const n of [1, 2, 3, 5, 7, 12, 16, 30, 49, 60, 1001, 4096, 5120, 6144, 7680]) {
    it(`matches the DFT and inverts for size ${n}`, () => {
      const fft = new ComplexFft(n);
      const re = random(n);
      const im = random(n).reverse();
      const re0 = re.slice();
      const im0 = im.slice();
      fft.forward(re, im);
      const bins = [...new Set([0, 1, 2, Math.floor(n / 3), Math.floor(n / 2), n - 1].filter((k) => k < n))];
      const ref = naiveDft(re0, im0, bins);
      const scale = Math.max(...ref.map((r) => Math.hypot(r.re, r.im)), 1);
      bins.forEach((k, i) => {
        assert.ok(Math.hypot(re[k] - ref[i].re, im[k] - ref[i].im) / scale < 1e-12, `bin ${k}`);
      });
      fft.inverse(re, im);
      for (let i = 0; i < n; i++) assert.ok(Math.abs(re[i] - re0[i]) < 1e-12 && Math.abs(im[i] - im0[i]) < 1e-12);
    });
  }
});

describe("real FFT", () => {
  it("uses PFFFT for every MDX n_fft and the TypeScript fallback otherwise", async () => {
    for (const n of [256, 4096, 5120, 6144, 7680, 8192]) {
      assert.ok(pffftSupports(n));
      assert.match((await createRealFft(n)).implementation, /^pffft/);
    }
    for (const n of [24, 48, 1000]) assert.equal((await createRealFft(n)).implementation, "js");
  });

  for (const n of [24, 30, 256, 4096, 6144, 7680]) {
    it(`packs [re0, reN/2, re1, im1, ...] and inverts unscaled, size ${n}, both implementations`, async () => {
      const x = Float32Array.from(random(n));
      const ref = naiveDft(Float64Array.from(x), new Float64Array(n), [0, 1, 5, n / 2 - 1, n / 2]);
      const scale = Math.max(...ref.map((r) => Math.hypot(r.re, r.im)));
      for (const fft of [new JsRealFft(n), await createRealFft(n)]) {
        fft.time.set(x);
        fft.forward();
        const got = [
          { re: fft.spectrum[0], im: 0 },
          { re: fft.spectrum[2], im: fft.spectrum[3] },
          { re: fft.spectrum[10], im: fft.spectrum[11] },
          { re: fft.spectrum[n - 2], im: fft.spectrum[n - 1] },
          { re: fft.spectrum[1], im: 0 },
        ];
        got.forEach((g, i) =>
          assert.ok(Math.hypot(g.re - ref[i].re, g.im - ref[i].im) / scale < 1e-6, `${fft.implementation} bin ${i}`),
        );
        fft.inverse();
        for (let i = 0; i < n; i++) assert.ok(Math.abs(fft.time[i] / n - x[i]) < 1e-6, `${fft.implementation} sample ${i}`);
      }
    });
  }
});
