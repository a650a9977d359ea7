// RVC's feature index: the faiss IVF-Flat file RVC's training writes (`added_IVF<n>_Flat_*.index`),
// read without faiss and searched the way RVC's pipeline does (index.search(feats, k=8) with the
// nprobe stored in the file, weights 1/score² normalised, blended by the index rate).
// No onnxruntime here: the API checks uploaded indexes with `inspectFeatureIndexFile`.
import { open, type FileHandle } from "node:fs/promises";
import { INT64, OnnxGraph } from "../onnx-graph.ts";

export class FeatureIndexError extends Error {
  override readonly name = "FeatureIndexError";
}

export interface FeatureIndexInfo {
  /** Feature size: 768 for RVC v2 (ContentVec layer 12), 256 for v1. */
  dim: number;
  /** Stored training features. */
  ntotal: number;
  /** Inverted lists (IVF cells). */
  nlist: number;
  /** Lists searched per query, as the file stores it (RVC writes 1). */
  nprobe: number;
}

/** Neighbours RVC retrieves per frame. */
export const RVC_NEIGHBOURS = 8;

interface ByteSource {
  readonly size: number;
  /** Fills `into` from byte `position`; a short read is an error. */
  read(into: Uint8Array, position: number): Promise<void>;
}

function bytesSource(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.length,
    async read(into, position) {
      if (position + into.length > bytes.length) throw new FeatureIndexError("the file ends early (truncated index)");
      into.set(bytes.subarray(position, position + into.length));
    },
  };
}

async function fileSource(handle: FileHandle): Promise<ByteSource> {
  const { size } = await handle.stat();
  return {
    size,
    async read(into, position) {
      if (position + into.length > size) throw new FeatureIndexError("the file ends early (truncated index)");
      let done = 0;
      while (done < into.length) {
        const { bytesRead } = await handle.read(into, done, into.length - done, position + done);
        if (bytesRead === 0) throw new FeatureIndexError("the file ends early (truncated index)");
        done += bytesRead;
      }
    },
  };
}

const FOURCC_NAMES: Record<string, string> = {
  IxF2: "IndexFlatL2",
  IxFI: "IndexFlatIP",
  IxFl: "IndexFlat",
  IwPQ: "IndexIVFPQ",
  IwSq: "IndexIVFScalarQuantizer",
  IwSQ: "IndexIVFScalarQuantizer",
  IwSh: "IndexIVFSpectralHash",
  IHNf: "IndexHNSWFlat",
  IxPq: "IndexPQ",
  IxMp: "IndexIDMap",
  IxM2: "IndexIDMap2",
  IxPT: "IndexPreTransform",
};

/** Sequential reads of faiss's little-endian binary format (`index_io`). */
class Cursor {
  position = 0;
  readonly #scratch = new Uint8Array(8);
  readonly #view = new DataView(this.#scratch.buffer);
  constructor(readonly source: ByteSource) {}

  async #fill(n: number): Promise<DataView> {
    await this.source.read(this.#scratch.subarray(0, n), this.position);
    this.position += n;
    return this.#view;
  }
  async fourcc(): Promise<string> {
    const v = await this.#fill(4);
    return String.fromCharCode(v.getUint8(0), v.getUint8(1), v.getUint8(2), v.getUint8(3));
  }
  async u8(): Promise<number> {
    return (await this.#fill(1)).getUint8(0);
  }
  async i32(): Promise<number> {
    return (await this.#fill(4)).getInt32(0, true);
  }
  async f32(): Promise<number> {
    return (await this.#fill(4)).getFloat32(0, true);
  }
  /** int64 / size_t that must be a non-negative count at most `max`. */
  async count(what: string, max: number): Promise<number> {
    const value = (await this.#fill(8)).getBigInt64(0, true);
    if (value < 0n || value > BigInt(max)) throw new FeatureIndexError(`implausible ${what} ${value} in the index header`);
    return Number(value);
  }
  async bytes(into: Uint8Array): Promise<void> {
    await this.source.read(into, this.position);
    this.position += into.length;
  }
  skip(n: number): void {
    if (this.position + n > this.source.size) throw new FeatureIndexError("the file ends early (truncated index)");
    this.position += n;
  }
}

const METRIC_L2 = 1;

/** faiss's `write_index_header`: d, ntotal, two dummies, is_trained, metric (and its argument). */
async function indexHeader(c: Cursor, what: string): Promise<{ d: number; ntotal: number }> {
  const d = await c.i32();
  const ntotal = await c.count(`${what} vector count`, 2 ** 40);
  await c.count("header field", 2 ** 62);
  await c.count("header field", 2 ** 62);
  const trained = await c.u8();
  const metric = await c.i32();
  if (metric > 1) await c.f32();
  if (d <= 0 || d > 65536) throw new FeatureIndexError(`implausible ${what} dimension ${d}`);
  if (metric !== METRIC_L2)
    throw new FeatureIndexError(`${what} uses metric ${metric === 0 ? "inner product" : metric}; RVC's indexes are L2`);
  if (trained !== 1) throw new FeatureIndexError(`${what} is not trained`);
  return { d, ntotal };
}

interface Layout extends FeatureIndexInfo {
  /** Byte offset of the quantizer's centroids (nlist × dim float32). */
  centroidsAt: number;
  /** Per list: vectors and the byte offset of its codes (ids follow them). */
  lists: Array<{ size: number; at: number }>;
}

/** Walks the file's structure, checking every size against the file, without reading vectors. */
async function readLayout(source: ByteSource): Promise<Layout> {
  const c = new Cursor(source);
  if (source.size < 4) throw new FeatureIndexError("the file is too short to be a faiss index");
  const kind = await c.fourcc();
  if (kind !== "IwFl") {
    const known = FOURCC_NAMES[kind];
    throw new FeatureIndexError(
      known
        ? `the file is a faiss ${known} (${kind}); RVC's feature index is an IndexIVFFlat (IwFl)`
        : `the file is not a faiss index (it starts with ${JSON.stringify(kind)}, not IwFl)`,
    );
  }
  const { d: dim, ntotal } = await indexHeader(c, "the index");
  const nlist = await c.count("nlist", 1 << 24);
  const nprobe = await c.count("nprobe", 1 << 24);
  if (nlist === 0) throw new FeatureIndexError("the index has no inverted lists");
  const quantizerKind = await c.fourcc();
  if (quantizerKind !== "IxF2")
    throw new FeatureIndexError(
      `the index's coarse quantizer is ${FOURCC_NAMES[quantizerKind] ?? JSON.stringify(quantizerKind)}; RVC's is an IndexFlatL2 (IxF2)`,
    );
  const quantizer = await indexHeader(c, "the coarse quantizer");
  if (quantizer.d !== dim || quantizer.ntotal !== nlist)
    throw new FeatureIndexError(`the coarse quantizer holds ${quantizer.ntotal}×${quantizer.d}, expected ${nlist}×${dim}`);
  const floats = await c.count("centroid array size", 2 ** 40);
  if (floats !== nlist * dim)
    throw new FeatureIndexError(`the coarse quantizer stores ${floats} floats, expected ${nlist * dim}`);
  const centroidsAt = c.position;
  c.skip(floats * 4);
  // The id -> list map: its type, its array (always written, empty unless type 1), and for a
  // hashtable (type 2) the (id, offset) pairs.
  const directMap = await c.u8();
  if (directMap > 2) throw new FeatureIndexError(`unknown direct map type ${directMap}`);
  c.skip((await c.count("direct map size", 2 ** 40)) * 8);
  if (directMap === 2) c.skip((await c.count("direct map size", 2 ** 40)) * 16);

  const listsKind = await c.fourcc();
  if (listsKind !== "ilar")
    throw new FeatureIndexError(
      listsKind === "il00"
        ? "the index has no inverted lists stored (written without its data)"
        : `the inverted lists are stored as ${JSON.stringify(listsKind)}; only in-file array lists (ilar) are read`,
    );
  if ((await c.count("nlist", 1 << 24)) !== nlist) throw new FeatureIndexError("the inverted lists disagree with nlist");
  const codeSize = await c.count("code size", 1 << 30);
  if (codeSize !== dim * 4)
    throw new FeatureIndexError(`the lists' code size is ${codeSize}, expected ${dim * 4} (float32 × ${dim})`);
  const sizes = new Array<number>(nlist).fill(0);
  const sizesKind = await c.fourcc();
  if (sizesKind === "full") {
    if ((await c.count("list count", 1 << 24)) !== nlist) throw new FeatureIndexError("the list sizes disagree with nlist");
    for (let i = 0; i < nlist; i++) sizes[i] = await c.count("list size", ntotal);
  } else if (sizesKind === "sprs") {
    const pairs = await c.count("list count", 2 << 24);
    if (pairs % 2 !== 0) throw new FeatureIndexError("malformed sparse list sizes");
    for (let i = 0; i < pairs / 2; i++) {
      const list = await c.count("list number", nlist - 1);
      sizes[list] = await c.count("list size", ntotal);
    }
  } else throw new FeatureIndexError(`unknown list size encoding ${JSON.stringify(sizesKind)}`);
  const lists: Layout["lists"] = [];
  let stored = 0;
  for (const size of sizes) {
    lists.push({ size, at: c.position });
    c.skip(size * (codeSize + 8));
    stored += size;
  }
  if (stored !== ntotal) throw new FeatureIndexError(`the lists hold ${stored} vectors, the header says ${ntotal}`);
  if (c.position !== source.size)
    throw new FeatureIndexError(`${source.size - c.position} unexpected bytes after the index (a different faiss layout?)`);
  return { dim, ntotal, nlist, nprobe, centroidsAt, lists };
}

async function withFile<T>(path: string, use: (source: ByteSource) => Promise<T>): Promise<T> {
  const handle = await open(path, "r");
  try {
    return await use(await fileSource(handle));
  } finally {
    await handle.close();
  }
}

/** Checks an index file's whole structure (reading headers and list sizes only). */
export function inspectFeatureIndexFile(path: string): Promise<FeatureIndexInfo> {
  return withFile(path, async (source) => {
    const { dim, ntotal, nlist, nprobe } = await readLayout(source);
    return { dim, ntotal, nlist, nprobe };
  });
}

export interface SearchResult {
  /** The stored vectors' ids (faiss labels), nearest first; -1 where fewer than k were found. */
  labels: Float64Array;
  /** Squared L2 distances, nearest first; faiss's FLT_MAX where fewer than k were found. */
  distances: Float64Array;
}

const FLT_MAX = 3.4028234663852886e38;

/** Queries searched per read of their lists: bounds the vectors held at once (≤ this many lists). */
const QUERIES_PER_READ = 256;

/** The vectors of some lists, read for one batch of queries: list number -> its rows here. */
interface ListRows {
  vectors: Float32Array;
  ids: Float64Array;
  rows: Map<number, { from: number; to: number }>;
}

/**
 * An IVF-Flat index: the centroids in memory, the lists' vectors left in the file and read for each
 * batch of queries, only the lists that batch probes (RVC's indexes hold up to 200,000 features,
 * 600 MB at 768-d; a 10 s piece probes a few hundred lists). Search: the `nprobe` nearest centroids,
 * then the k nearest vectors in those lists. `close()` lets go of the file.
 */
export class FeatureIndex implements FeatureIndexInfo {
  readonly dim: number;
  readonly ntotal: number;
  readonly nlist: number;
  readonly nprobe: number;
  readonly #centroids: Float32Array;
  readonly #centroidNorms: Float64Array;
  readonly #lists: Layout["lists"];
  readonly #source: ByteSource;
  readonly #close: () => Promise<void>;

  private constructor(layout: Layout, centroids: Float32Array, source: ByteSource, close: () => Promise<void>) {
    this.dim = layout.dim;
    this.ntotal = layout.ntotal;
    this.nlist = layout.nlist;
    this.nprobe = Math.max(1, Math.min(layout.nprobe, layout.nlist));
    this.#centroids = centroids;
    this.#lists = layout.lists;
    this.#source = source;
    this.#close = close;
    this.#centroidNorms = new Float64Array(layout.nlist);
    for (let l = 0; l < layout.nlist; l++) {
      let s = 0;
      for (let j = l * layout.dim; j < (l + 1) * layout.dim; j++) s += centroids[j]! * centroids[j]!;
      this.#centroidNorms[l] = s;
    }
  }

  /** Opens the file and keeps it open (its lists are read as queries need them) until `close()`. */
  static async load(path: string): Promise<FeatureIndex> {
    const handle = await open(path, "r");
    try {
      return await FeatureIndex.#read(await fileSource(handle), () => handle.close());
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  static fromBytes(bytes: Uint8Array): Promise<FeatureIndex> {
    return FeatureIndex.#read(bytesSource(bytes), async () => {});
  }

  static async #read(source: ByteSource, close: () => Promise<void>): Promise<FeatureIndex> {
    const layout = await readLayout(source);
    const centroids = new Float32Array(layout.nlist * layout.dim);
    await source.read(new Uint8Array(centroids.buffer), layout.centroidsAt);
    return new FeatureIndex(layout, centroids, source, close);
  }

  async close(): Promise<void> {
    await this.#close();
  }

  /** Reads the given lists' vectors and ids from the file, in file order. */
  async #readLists(lists: Iterable<number>): Promise<ListRows> {
    const wanted = [...new Set(lists)].sort((a, b) => a - b);
    const total = wanted.reduce((sum, l) => sum + this.#lists[l]!.size, 0);
    const { dim } = this;
    const vectors = new Float32Array(total * dim);
    const ids = new Float64Array(total);
    const rows = new Map<number, { from: number; to: number }>();
    let row = 0;
    for (const l of wanted) {
      const { size, at } = this.#lists[l]!;
      rows.set(l, { from: row, to: row + size });
      if (size > 0) {
        await this.#source.read(new Uint8Array(vectors.buffer, row * dim * 4, size * dim * 4), at);
        const raw = new Uint8Array(size * 8);
        await this.#source.read(raw, at + size * dim * 4);
        const view = new DataView(raw.buffer);
        for (let i = 0; i < size; i++) ids[row + i] = Number(view.getBigInt64(i * 8, true));
      }
      row += size;
    }
    return { vectors, ids, rows };
  }

  /**
   * Runs `each(q, found, rows, dists, read)` for every query with its k nearest stored vectors
   * (rows into `read.vectors`, squared distances, nearest first; found ≤ k), batch by batch, each
   * batch's probed lists read once.
   */
  async #searchBatches(
    queries: Float32Array,
    k: number,
    probes: Int32Array | undefined,
    each: (q: number, found: number, rows: Int32Array, dists: Float64Array, read: ListRows) => void,
  ): Promise<void> {
    const { dim, nprobe } = this;
    const n = queries.length / dim;
    const rows = new Int32Array(k);
    const dists = new Float64Array(k);
    for (let first = 0; first < n; first += QUERIES_PER_READ) {
      const last = Math.min(n, first + QUERIES_PER_READ);
      const probed: number[][] = [];
      for (let q = first; q < last; q++)
        probed.push(probes ? Array.from(probes.subarray(q * nprobe, (q + 1) * nprobe)) : this.#probe(queries, q * dim));
      const read = await this.#readLists(probed.flat());
      for (let q = first; q < last; q++)
        each(q, this.#nearest(queries, q, k, rows, dists, probed[q - first]!, read), rows, dists, read);
    }
  }

  /** The `nprobe` nearest centroids of one query (||c||² − 2·x·c, the query's norm is common). */
  #probe(query: Float32Array, offset: number): number[] {
    const { dim, nlist, nprobe } = this;
    const best: Array<[number, number]> = [];
    const c = this.#centroids;
    for (let l = 0; l < nlist; l++) {
      let dot = 0;
      const base = l * dim;
      let j = 0;
      for (; j + 4 <= dim; j += 4) {
        dot +=
          query[offset + j]! * c[base + j]! +
          query[offset + j + 1]! * c[base + j + 1]! +
          query[offset + j + 2]! * c[base + j + 2]! +
          query[offset + j + 3]! * c[base + j + 3]!;
      }
      for (; j < dim; j++) dot += query[offset + j]! * c[base + j]!;
      const score = this.#centroidNorms[l]! - 2 * dot;
      if (best.length < nprobe || score < best[best.length - 1]![0]) {
        let at = best.length < nprobe ? best.length : best.length - 1;
        if (best.length < nprobe) best.push([score, l]);
        while (at > 0 && best[at - 1]![0] > score) {
          best[at] = best[at - 1]!;
          at--;
        }
        best[at] = [score, l];
      }
    }
    return best.map(([, l]) => l);
  }

  /**
   * The k nearest rows of query `q` (rows of `queries`, dim wide) in `lists`: row numbers into
   * `read.vectors` and squared distances, nearest first, count = how many were found (≤ k).
   */
  #nearest(
    queries: Float32Array,
    q: number,
    k: number,
    rows: Int32Array,
    dists: Float64Array,
    lists: number[],
    read: ListRows,
  ): number {
    const { dim } = this;
    const offset = q * dim;
    const v = read.vectors;
    let found = 0;
    for (const list of lists) {
      const { from, to } = read.rows.get(list)!;
      for (let r = from; r < to; r++) {
        const base = r * dim;
        let d0 = 0;
        let d1 = 0;
        let d2 = 0;
        let d3 = 0;
        let j = 0;
        for (; j + 4 <= dim; j += 4) {
          const a = queries[offset + j]! - v[base + j]!;
          const b = queries[offset + j + 1]! - v[base + j + 1]!;
          const c = queries[offset + j + 2]! - v[base + j + 2]!;
          const e = queries[offset + j + 3]! - v[base + j + 3]!;
          d0 += a * a;
          d1 += b * b;
          d2 += c * c;
          d3 += e * e;
        }
        for (; j < dim; j++) d0 += (queries[offset + j]! - v[base + j]!) ** 2;
        const d = d0 + d1 + d2 + d3;
        if (found === k && d >= dists[k - 1]!) continue;
        let at = found < k ? found++ : k - 1;
        while (at > 0 && dists[at - 1]! > d) {
          dists[at] = dists[at - 1]!;
          rows[at] = rows[at - 1]!;
          at--;
        }
        dists[at] = d;
        rows[at] = r;
      }
    }
    return found;
  }

  /**
   * An ONNX graph of the coarse step for a batch: `features` [T, dim] -> `lists` [T, nprobe]
   * (int64), the nearest centroids by ||c||² − 2·x·c as one matrix product, which is how faiss's
   * IndexFlatL2 searches batches of 20 or more queries too. Pass its result as `probes`.
   */
  probeGraph(): Uint8Array {
    const { dim, nlist } = this;
    const g = new OnnxGraph();
    const x = g.input("features", ["frames", dim]);
    const transposed = new Float32Array(dim * nlist);
    for (let l = 0; l < nlist; l++) for (let j = 0; j < dim; j++) transposed[j * nlist + l] = -2 * this.#centroids[l * dim + j]!;
    const products = g.node("MatMul", [x, g.float(transposed, [dim, nlist])]);
    const scores = g.node("Add", [products, g.float(this.#centroidNorms, [nlist])]);
    g.nodeOutputs("TopK", [scores, g.int64([this.nprobe])], ["distances", "lists"], { axis: -1, largest: 0, sorted: 1 });
    g.output("lists", ["frames", this.nprobe], INT64);
    return g.encode({}, 17);
  }

  /** faiss's `index.search(queries, k)`: labels and squared distances per query, padded like faiss. */
  async search(queries: Float32Array, k = RVC_NEIGHBOURS, probes?: Int32Array): Promise<SearchResult> {
    this.#checkWidth(queries);
    const n = queries.length / this.dim;
    const labels = new Float64Array(n * k).fill(-1);
    const distances = new Float64Array(n * k).fill(FLT_MAX);
    await this.#searchBatches(queries, k, probes, (q, found, rows, dists, read) => {
      for (let i = 0; i < found; i++) {
        labels[q * k + i] = read.ids[rows[i]!]!;
        distances[q * k + i] = dists[i]!;
      }
    });
    return { labels, distances };
  }

  /**
   * RVC's retrieval, frame by frame: the k nearest stored features weighted by 1/score²
   * (normalised), blended as `rate · retrieved + (1 − rate) · frame`. Two cases where RVC's
   * numpy gives NaN are defined here: a frame equal to stored features takes those features, and
   * a frame whose probed lists are empty keeps its own features. `probes`: the lists to search
   * per frame (from `probeGraph`), else found here.
   */
  async blend(features: Float32Array, rate: number, k = RVC_NEIGHBOURS, probes?: Int32Array): Promise<Float32Array> {
    this.#checkWidth(features);
    if (rate === 0) return Float32Array.from(features);
    const { dim } = this;
    const out = new Float32Array(features.length);
    const weights = new Float64Array(k);
    const retrieved = new Float64Array(dim);
    await this.#searchBatches(features, k, probes, (q, found, rows, dists, read) => {
      const offset = q * dim;
      if (found === 0) {
        out.set(features.subarray(offset, offset + dim), offset);
        return;
      }
      let total = 0;
      const exact = dists[0] === 0;
      for (let i = 0; i < found; i++) {
        weights[i] = exact ? (dists[i] === 0 ? 1 : 0) : 1 / (dists[i]! * dists[i]!);
        total += weights[i]!;
      }
      retrieved.fill(0);
      const v = read.vectors;
      for (let i = 0; i < found; i++) {
        const w = weights[i]! / total;
        const base = rows[i]! * dim;
        for (let j = 0; j < dim; j++) retrieved[j]! += w * v[base + j]!;
      }
      for (let j = 0; j < dim; j++) out[offset + j] = rate * retrieved[j]! + (1 - rate) * features[offset + j]!;
    });
    return out;
  }

  #checkWidth(data: Float32Array): void {
    if (data.length % this.dim !== 0)
      throw new FeatureIndexError(`features of width ${this.dim} expected (got ${data.length} values)`);
  }
}
