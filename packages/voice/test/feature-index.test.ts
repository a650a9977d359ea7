import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { FeatureIndex, inspectFeatureIndexFile } from "../src/rvc/feature-index.ts";
import { IndexRetrieval } from "../src/rvc/index-retrieval.ts";
import { rvcPhone } from "../src/rvc/rvc-voice.ts";
import { tempDir } from "./support.ts";

const fixtures = new URL("./fixtures/rvc-index/", import.meta.url);

interface Expected {
  dim: number;
  ntotal: number;
  nlist: number;
  nprobe: number;
  k: number;
  indexRate: number;
  labels: number[][];
  distances: number[][];
}

async function fixture(name: string) {
  const expected = JSON.parse(await readFile(new URL(`${name}.json`, fixtures), "utf8")) as Expected;
  const f32 = async (suffix: string) => {
    const bytes = await readFile(new URL(`${name}.${suffix}.f32`, fixtures));
    return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  };
  return { expected, queries: await f32("queries"), blended: await f32("blended") };
}

describe("RVC feature index (faiss IVF-Flat read in TypeScript, searched as RVC does)", () => {
  for (const name of ["ivf-flat", "ivf-flat-sparse"]) {
    it(`${name}: the same neighbours and distances as faiss 1.7.3, and RVC's blend within 1e-5`, async () => {
      const { expected, queries, blended } = await fixture(name);
      const path = new URL(`${name}.index`, fixtures).pathname;
      assert.deepEqual(await inspectFeatureIndexFile(path), {
        dim: expected.dim,
        ntotal: expected.ntotal,
        nlist: expected.nlist,
        nprobe: expected.nprobe,
      });
      const index = await FeatureIndex.load(path);
      const { labels, distances } = await index.search(queries, expected.k);
      const n = queries.length / expected.dim;
      for (let q = 0; q < n; q++) {
        const row = Array.from(labels.subarray(q * expected.k, (q + 1) * expected.k));
        assert.deepEqual(row, expected.labels[q], `query ${q}`);
        for (let i = 0; i < expected.k; i++) {
          const want = expected.distances[q]![i]!;
          const got = distances[q * expected.k + i]!;
          assert.ok(Math.abs(got - want) <= 1e-5 * Math.max(1, want), `query ${q} neighbour ${i}: ${got} vs ${want}`);
        }
      }
      const ours = await index.blend(queries, expected.indexRate, expected.k);
      let worst = 0;
      for (let i = 0; i < ours.length; i++) {
        // RVC's numpy blend is NaN where no neighbour was found; ours keeps the frame's features.
        const want = Number.isNaN(blended[i]!) ? queries[i]! : blended[i]!;
        worst = Math.max(worst, Math.abs(ours[i]! - want));
      }
      assert.ok(worst <= 1e-5, `largest difference ${worst}`);
      await index.close();
    });
  }

  it("the engine's coarse step in onnxruntime probes the same lists: the same blend as faiss's neighbours give", async () => {
    const { expected, queries, blended } = await fixture("ivf-flat");
    const retrieval = await IndexRetrieval.load(new URL("ivf-flat.index", fixtures).pathname);
    const ours = await retrieval.blend(queries, expected.indexRate);
    let worst = 0;
    for (let i = 0; i < ours.length; i++) worst = Math.max(worst, Math.abs(ours[i]! - blended[i]!));
    assert.ok(worst <= 1e-5, `largest difference ${worst}`);
    await retrieval.close();
  });

  it("builds the synthesizer's phone as RVC does: retrieval at 50 frames/s, each frame twice, protect on unvoiced frames", async () => {
    const { queries } = await fixture("ivf-flat");
    const dim = 64;
    const own = queries.subarray(0, 3 * dim);
    const index = await FeatureIndex.load(new URL("ivf-flat.index", fixtures).pathname);
    const retrieval = { blend: (f: Float32Array, rate: number) => index.blend(f, rate) };
    const blended = await index.blend(own, 0.8);
    // 6 frames at 100/s from 3 ContentVec frames; frame 3 unvoiced, frame 5 at 0.5 Hz (below 1: unvoiced for RVC).
    const pitchf = Float32Array.of(220, 220, 220, 0, 221, 0.5);
    const phone = await rvcPhone(own, dim, pitchf, retrieval, 0.8, 0.33);
    const frame = (t: number) => Array.from(phone.subarray(t * dim, (t + 1) * dim));
    const row = (a: Float32Array, i: number) => Array.from(a.subarray(i * dim, (i + 1) * dim));
    assert.deepEqual(frame(0), row(blended, 0));
    assert.deepEqual(frame(1), row(blended, 0));
    assert.deepEqual(frame(2), row(blended, 1));
    assert.deepEqual(frame(4), row(blended, 2));
    for (const t of [3, 5]) {
      const src = t >> 1;
      const want = row(blended, src).map((b, j) => Math.fround(b * 0.33 + own[src * dim + j]! * 0.67));
      frame(t).forEach((v, j) => assert.ok(Math.abs(v - want[j]!) < 1e-6, `frame ${t}`));
    }
    // protect 0.5 turns it off; without an index the phone is ContentVec's frames.
    const off = await rvcPhone(own, dim, pitchf, retrieval, 0.8, 0.5);
    assert.deepEqual(Array.from(off.subarray(3 * dim, 4 * dim)), row(blended, 1));
    const plain = await rvcPhone(own, dim, pitchf, undefined, 0.8, 0.33);
    assert.deepEqual(Array.from(plain.subarray(3 * dim, 4 * dim)), row(own, 1));
    await index.close();
  });

  it("index rate 0 returns the features unchanged, and 1 the retrieved features alone", async () => {
    const { queries } = await fixture("ivf-flat");
    const index = await FeatureIndex.load(new URL("ivf-flat.index", fixtures).pathname);
    assert.deepEqual(await index.blend(queries, 0), queries);
    const full = await index.blend(queries.subarray(0, 64), 1);
    const { labels } = await index.search(queries.subarray(0, 64), 1);
    const half = await index.blend(queries.subarray(0, 64), 0.5);
    for (let j = 0; j < 64; j++) assert.ok(Math.abs(half[j]! - (0.5 * full[j]! + 0.5 * queries[j]!)) < 1e-6);
    assert.ok(labels[0]! >= 0);
    await index.close();
  });

  it("keeps the vectors in the file: reads each batch's probed lists (320 queries, two batches, faiss's neighbours), and a closed index cannot search", async () => {
    const { expected, queries } = await fixture("ivf-flat");
    const index = await FeatureIndex.load(new URL("ivf-flat.index", fixtures).pathname);
    const copies = 4;
    const many = new Float32Array(queries.length * copies);
    for (let c = 0; c < copies; c++) many.set(queries, c * queries.length);
    const { labels } = await index.search(many, expected.k);
    const n = queries.length / expected.dim;
    for (let q = 0; q < n * copies; q++)
      assert.deepEqual(Array.from(labels.subarray(q * expected.k, (q + 1) * expected.k)), expected.labels[q % n], `query ${q}`);
    await index.close();
    await assert.rejects(index.search(queries, expected.k), /closed|EBADF/);
  });

  it("rejects other faiss index types, truncated files and non-index files, naming the problem", async () => {
    const path = (name: string) => new URL(name, fixtures).pathname;
    await assert.rejects(
      inspectFeatureIndexFile(path("flat-l2.index")),
      /faiss IndexFlatL2 \(IxF2\); RVC's feature index is an IndexIVFFlat/,
    );
    await assert.rejects(inspectFeatureIndexFile(path("ivf-flat-ip.index")), /inner product; RVC's indexes are L2/);
    const dir = await tempDir();
    const whole = await readFile(path("ivf-flat.index"));
    await writeFile(join(dir, "cut.index"), whole.subarray(0, whole.length - 100));
    await assert.rejects(inspectFeatureIndexFile(join(dir, "cut.index")), /truncated index/);
    await writeFile(join(dir, "long.index"), Buffer.concat([whole, Buffer.alloc(3)]));
    await assert.rejects(inspectFeatureIndexFile(join(dir, "long.index")), /3 unexpected bytes after the index/);
    await writeFile(join(dir, "text.index"), "hello world, not an index");
    await assert.rejects(inspectFeatureIndexFile(join(dir, "text.index")), /not a faiss index/);
    await assert.rejects(FeatureIndex.fromBytes(whole.subarray(0, 2)), /too short/);
  });
});
