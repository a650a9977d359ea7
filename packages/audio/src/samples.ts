/**
 * The pieces one after another in one new array made by `make` (the first piece itself when it is
 * the only one): a sentence's audio, a file read in blocks.
 */
export function concatSamples<A extends Float32Array | Int16Array>(pieces: readonly A[], make: (length: number) => A): A {
  if (pieces.length === 1) return pieces[0]!;
  const out = make(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
