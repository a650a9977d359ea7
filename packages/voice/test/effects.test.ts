import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { effectChainFilter, EffectChainError, parseEffectChain, POST_EFFECTS, PRE_EFFECTS } from "../src/index.ts";
import { readMono, run, tempDir } from "./support.ts";

/** A 0.5 s loud 200 Hz + 6 kHz burst, then 1 s of quiet 200 Hz (-40 dB), at 44.1 kHz. */
async function testSignal(): Promise<string> {
  const path = join(await tempDir(), "signal.wav");
  await run("ffmpeg", [
    "-v",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    "sine=f=200:d=1.5",
    "-f",
    "lavfi",
    "-i",
    "sine=f=6000:d=1.5",
    "-filter_complex",
    "[0][1]amix=inputs=2:normalize=0,volume='if(lt(t,0.5),0.7,0.007)':eval=frame",
    "-ar",
    "44100",
    path,
  ]);
  return path;
}

async function apply(field: "pre" | "post", chain: Record<string, unknown>): Promise<Float32Array> {
  const input = await testSignal();
  const filter = effectChainFilter(field, parseEffectChain(field, JSON.stringify(chain)), 44100);
  assert.ok(filter, "the chain makes a filter");
  const out = join(await tempDir(), "out.wav");
  await run("ffmpeg", ["-v", "error", "-y", "-i", input, "-filter_complex", `[0:a]${filter}[o]`, "-map", "[o]", out]);
  return readMono(out, 44100);
}

const rms = (x: Float32Array, from: number, to: number) => {
  let s = 0;
  for (let i = Math.floor(from * 44100); i < Math.floor(to * 44100); i++) s += x[i]! ** 2;
  return Math.sqrt(s / (Math.floor(to * 44100) - Math.floor(from * 44100)));
};
const bandRms = async (x: Float32Array, f: number) => {
  // Goertzel power at f over the loud part
  const n = 4410;
  const w = (2 * Math.PI * f) / 44100;
  let s1 = 0;
  let s2 = 0;
  for (let i = 4410; i < 4410 + n; i++) {
    const s0 = x[i]! + 2 * Math.cos(w) * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return Math.sqrt(s1 * s1 + s2 * s2 - 2 * Math.cos(w) * s1 * s2) / n;
};

describe("pre and post effects", () => {
  it("every effect of the catalogue parses with its defaults and becomes an ffmpeg filter", () => {
    for (const [field, catalogue] of [
      ["pre", PRE_EFFECTS],
      ["post", POST_EFFECTS],
    ] as const) {
      for (const name of Object.keys(catalogue)) {
        const chain = parseEffectChain(field, JSON.stringify({ [name]: {} }));
        assert.deepEqual(Object.keys(chain[name]!), Object.keys(catalogue[name]!));
        assert.ok(effectChainFilter(field, chain, 44100), `${field}.${name}`);
      }
    }
  });

  it("takes the hosted documentation's effect names (NoiseGate, HighPassFilter, Reverb, ...) as the same effects", () => {
    const documented = {
      pre: {
        NoiseGate: { threshold_db: -40 },
        Compressor: {},
        HighPassFilter: { cutoff_frequency_hz: 100 },
        LowPassFilter: true,
      },
      post: { Chorus: {}, Reverb: { room_size: 0.8 }, Compressor: {}, Delay: { delay_seconds: 0.25 } },
    };
    for (const field of ["pre", "post"] as const) {
      const chain = parseEffectChain(field, JSON.stringify(documented[field]));
      const camel = Object.fromEntries(Object.entries(documented[field]).map(([k, v]) => [k[0]!.toLowerCase() + k.slice(1), v]));
      assert.deepEqual(chain, parseEffectChain(field, JSON.stringify(camel)));
      assert.deepEqual(Object.keys(chain), Object.keys(field === "pre" ? PRE_EFFECTS : POST_EFFECTS));
    }
    assert.throws(
      () => parseEffectChain("post", '{"reverb":{},"Reverb":{"room_size":1}}'),
      /post\.Reverb: the effect is already given as reverb/,
    );
    assert.throws(
      () => parseEffectChain("pre", '{"NOISEGATE":{}}'),
      /pre\.NOISEGATE is not a known pre effect \(known: noiseGate.*; or NoiseGate/,
    );
    assert.throws(() => parseEffectChain("pre", '{"Reverb":{}}'), /pre\.Reverb is not a known pre effect/);
  });

  it("names unknown effects, unknown parameters and out-of-range values", () => {
    assert.throws(() => parseEffectChain("pre", '{"distortion":{}}'), /pre\.distortion is not a known pre effect/);
    assert.throws(() => parseEffectChain("post", '{"reverb":{"size":1}}'), /post\.reverb\.size is not a parameter of reverb/);
    assert.throws(
      () => parseEffectChain("post", '{"chorus":{"rate_hz":50}}'),
      /post\.chorus\.rate_hz must be between 0.01 and 20/,
    );
    assert.throws(() => parseEffectChain("pre", "[1]"), EffectChainError);
  });

  it("noiseGate silences the quiet tail and keeps the loud part", async () => {
    const input = await readMono(await testSignal(), 44100);
    const out = await apply("pre", { noiseGate: { threshold_db: -40 } });
    assert.ok(rms(out, 0.9, 1.4) < 0.2 * rms(input, 0.9, 1.4), `tail ${rms(out, 0.9, 1.4)} vs ${rms(input, 0.9, 1.4)}`);
    assert.ok(rms(out, 0.1, 0.4) > 0.8 * rms(input, 0.1, 0.4));
  });

  it("compressor lowers the loud part relative to the quiet tail", async () => {
    const input = await readMono(await testSignal(), 44100);
    const out = await apply("pre", { compressor: { threshold_db: -40, ratio: 10, attack_ms: 1, release_ms: 50 } });
    assert.ok(rms(out, 0.1, 0.4) < 0.5 * rms(input, 0.1, 0.4), `loud part ${rms(out, 0.1, 0.4)} vs ${rms(input, 0.1, 0.4)}`);
  });

  it("highPassFilter removes the 200 Hz tone and lowPassFilter the 6 kHz tone", async () => {
    const high = await apply("pre", { highPassFilter: { cutoff_frequency_hz: 2000 } });
    assert.ok((await bandRms(high, 200)) < 0.05 * (await bandRms(high, 6000)));
    const low = await apply("pre", { lowPassFilter: { cutoff_frequency_hz: 1000 } });
    assert.ok((await bandRms(low, 6000)) < 0.05 * (await bandRms(low, 200)));
  });

  it("delay repeats the burst after delay_seconds, with feedback echoes", async () => {
    const input = await readMono(await testSignal(), 44100);
    const out = await apply("post", { delay: { delay_seconds: 0.6, feedback: 0.5, mix: 0.8 } });
    assert.ok(rms(out, 0.7, 1.0) > 0.5 * rms(input, 0.1, 0.4), `echo ${rms(out, 0.7, 1.0)}`);
    assert.ok(rms(out, 1.3, 1.5) > 5 * rms(input, 1.3, 1.5), "a second echo from the feedback");
  });

  it("reverb leaves a tail after the burst; chorus changes the signal", async () => {
    const dry = await apply("post", { compressor: { threshold_db: 0, ratio: 1 } });
    const wet = await apply("post", { reverb: { room_size: 0.9, wet_level: 0.8, dry_level: 0.5 } });
    assert.ok(rms(wet, 0.55, 0.75) > 3 * rms(dry, 0.55, 0.75), `tail ${rms(wet, 0.55, 0.75)} vs ${rms(dry, 0.55, 0.75)}`);
    const chorus = await apply("post", { chorus: { mix: 0.8, depth: 0.5, feedback: 0.3 } });
    let diff = 0;
    for (let i = 4410; i < 17640; i++) diff += (chorus[i]! - dry[i]!) ** 2;
    assert.ok(Math.sqrt(diff / 13230) > 0.05);
  });
});
