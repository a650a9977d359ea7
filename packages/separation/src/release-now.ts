/**
 * Frees an array's memory now, when the array is the whole of an ArrayBuffer of this thread's:
 * otherwise V8 keeps a garbage buffer until a collection that its external-memory growth
 * triggers, up to 64 MB of them per thread. Every view of the buffer is empty afterwards, so
 * call it only on an array nothing else reads any more. Shared memory and views into a larger
 * buffer are left to the collector.
 */
export function releaseNow(array: Float32Array): void {
  const { buffer } = array;
  if (!(buffer instanceof ArrayBuffer) || buffer.detached) return;
  if (array.byteOffset !== 0 || array.byteLength !== buffer.byteLength) return;
  buffer.transfer(0);
}
