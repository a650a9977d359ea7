// Does a blended voice sound between its parents? For every pair (A, B) of the default native
// voices: blend them 50/50 with @mixdown/onnx-blend (the worker's blend), convert held-out espeak-ng
// speech (voices and texts that never built a default voice) with A, B and the blend through
// convertVoiceFile (the worker's conversion, pitch shift 0 so only the spectral envelope differs),
// and compare the outputs' mean MFCC (c1..c12):
//   between: d(blend, A) < d(A, B) and d(blend, B) < d(A, B)
//   t:       position of the blend along the A→B axis, (m − a)·(b − a) / |b − a|², 0 = A, 1 = B
//   off:     distance of the blend from that axis, relative to d(A, B)
// A sweep of B's share (0.25, 0.5, 0.75) checks that t moves with it.
//   pnpm eval:blend
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { blendOnnxModels, parseOnnx } from "@mixdown/onnx-blend";
import { convertVoiceFile, loadVoiceEngine, mfccDistance, readVoiceCatalogue, type VoiceEngine } from "../src/index.ts";
import { mfccOfFile, modelsDir, readRecipe, speak } from "./eval-support.ts";

const recipe = await readRecipe();
const dir = await mkdtemp(join(tmpdir(), "mixdown-eval-blend-"));
const SHARES = [0.25, 0.5, 0.75];

/** Position along a→b and distance from the a–b line (relative to |b − a|). */
function axis(m: Float64Array, a: Float64Array, b: Float64Array): { t: number; off: number } {
  let dot = 0;
  let len2 = 0;
  for (let i = 0; i < a.length; i++) {
    dot += (m[i]! - a[i]!) * (b[i]! - a[i]!);
    len2 += (b[i]! - a[i]!) ** 2;
  }
  const t = dot / len2;
  let perp = 0;
  for (let i = 0; i < a.length; i++) perp += (m[i]! - a[i]! - t * (b[i]! - a[i]!)) ** 2;
  return { t, off: Math.sqrt(perp / len2) };
}

let n = 0;
async function convert(engine: VoiceEngine, input: string): Promise<Float64Array> {
  const result = await convertVoiceFile({
    inputPath: input,
    engine,
    params: { conversionStrength: 1, modelVolumeMix: 0, pitchShift: 0, pre: {}, post: {} },
    outDir: join(dir, `out-${n++}`),
  });
  return mfccOfFile(result.output);
}

/** True when two model files carry the same weights (every initializer byte for byte). */
async function sameWeights(a: string, b: string): Promise<boolean> {
  const [ma, mb] = [parseOnnx(await readFile(a), a), parseOnnx(await readFile(b), b)];
  const bytes = (m: typeof ma, name: string) => {
    const t = m.initializers.get(name);
    return t ? Buffer.from(m.bytes.subarray(t.start, t.end)) : undefined;
  };
  return ma.order.length === mb.order.length && ma.order.every((name) => bytes(mb, name)?.equals(bytes(ma, name)!) ?? false);
}

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

try {
  const sourceText = recipe.heldOut.texts[0]!;
  const sources: string[] = [];
  for (const voice of recipe.heldOut.voices) sources.push(await speak(dir, recipe.speed, voice, sourceText, `source-${voice}`));
  const catalogue = (await readVoiceCatalogue(modelsDir)).filter((v) => !v.instrument);
  const engines = new Map<string, VoiceEngine>();
  const outputs = new Map<string, Float64Array[]>(); // slug → MFCC of each source converted
  for (const voice of catalogue) {
    const engine = await loadVoiceEngine(join(modelsDir, voice.file));
    engines.set(voice.slug, engine);
    const mfccs: Float64Array[] = [];
    for (const source of sources) mfccs.push(await convert(engine, source));
    outputs.set(voice.slug, mfccs);
  }

  const rows: string[][] = [];
  const sweep: string[][] = [];
  const ts: number[] = [];
  const identical: string[] = [];
  let between = 0;
  let total = 0;
  let monotonic = 0;
  let blendMs = 0;
  let blends = 0;
  for (let i = 0; i < catalogue.length; i++) {
    for (let j = i + 1; j < catalogue.length; j++) {
      const [A, B] = [catalogue[i]!, catalogue[j]!];
      if (await sameWeights(join(modelsDir, A.file), join(modelsDir, B.file))) {
        identical.push(`${A.slug} + ${B.slug}`);
        continue;
      }
      const tByShare: number[] = [];
      for (const share of SHARES) {
        const output = join(dir, `${A.slug}+${B.slug}-${share}.onnx`);
        const started = performance.now();
        await blendOnnxModels({
          inputs: [
            { path: join(modelsDir, A.file), alpha: 1 - share },
            { path: join(modelsDir, B.file), alpha: share },
          ],
          output,
        });
        blendMs += performance.now() - started;
        blends++;
        const engine = await loadVoiceEngine(output);
        const perSource: Array<{ dMA: number; dMB: number; dAB: number; t: number; off: number }> = [];
        for (const [k, source] of sources.entries()) {
          const [a, b] = [outputs.get(A.slug)![k]!, outputs.get(B.slug)![k]!];
          const m = await convert(engine, source);
          perSource.push({ dMA: mfccDistance(m, a), dMB: mfccDistance(m, b), dAB: mfccDistance(a, b), ...axis(m, a, b) });
        }
        await engine.close();
        tByShare.push(mean(perSource.map((p) => p.t)));
        if (share !== 0.5) continue;
        for (const [k, p] of perSource.entries()) {
          const ok = p.dMA < p.dAB && p.dMB < p.dAB && p.t > 0 && p.t < 1;
          between += ok ? 1 : 0;
          total++;
          ts.push(p.t);
          rows.push([
            `${A.slug} + ${B.slug}`,
            recipe.heldOut.voices[k]!,
            p.dAB.toFixed(2),
            p.dMA.toFixed(2),
            p.dMB.toFixed(2),
            p.t.toFixed(2),
            p.off.toFixed(2),
            ok ? "yes" : "NO",
          ]);
        }
      }
      const rising = tByShare.every((t, k) => k === 0 || t > tByShare[k - 1]!);
      monotonic += rising ? 1 : 0;
      sweep.push([`${A.slug} + ${B.slug}`, ...tByShare.map((t) => t.toFixed(2)), rising ? "yes" : "NO"]);
    }
  }
  for (const engine of engines.values()) await engine.close();

  const table = (header: string[], body: string[][]) => {
    console.log(`| ${header.join(" | ")} |\n|${header.map(() => "---").join("|")}|`);
    for (const r of body) console.log(`| ${r.join(" | ")} |`);
  };
  console.log("50/50 blends, held-out speech (pitch shift 0), mean MFCC c1..c12 of the converted outputs:\n");
  table(
    ["A + B", "source (held out)", "d(A, B)", "d(blend, A)", "d(blend, B)", "t on A→B", "off axis / d(A, B)", "between"],
    rows,
  );
  console.log(`\n${between}/${total} blend outputs between A's and B's: d(blend, A) < d(A, B), d(blend, B) < d(A, B), 0 < t < 1`);
  console.log(
    `t of the 50/50 blends: mean ${mean(ts).toFixed(2)}, min ${Math.min(...ts).toFixed(2)}, max ${Math.max(...ts).toFixed(2)}`,
  );
  console.log("\nB's share in the blend vs t (mean over the held-out sources):\n");
  table(["A + B", ...SHARES.map((s) => `t at ${s}`), "rising"], sweep);
  console.log(`\n${monotonic}/${sweep.length} pairs with t rising with B's share`);
  for (const pair of identical) console.log(`skipped ${pair}: the two models have identical weights (nothing to lie between)`);
  console.log(`blend time: ${(blendMs / blends).toFixed(1)} ms per native blend (${blends} blends)`);
  if (between < total || monotonic < sweep.length) process.exitCode = 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
