// Why an idle worker restarts itself instead of letting jemalloc give memory back: runs a 400 MB
// working set (20 x 20 MB malloc'd buffers) three times, a second apart, then idles 15 s, and
// prints each run's minor page faults and RSS. Run it under each MALLOC_CONF to compare:
//   LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1,narenas:1 \
//     node --expose-gc apps/worker/scripts/measure-allocator-decay.mjs
//   LD_PRELOAD=... MALLOC_CONF=background_thread:true,dirty_decay_ms:10000,muzzy_decay_ms:0,narenas:1 node --expose-gc ...
const rss = () => Math.round(process.memoryUsage.rss() / 1e6);
const faults = () => process.resourceUsage().minorPageFault;
if (!globalThis.gc) throw new Error("run with node --expose-gc");
for (let run = 0; run < 3; run++) {
  const before = faults();
  let buffers = [];
  for (let i = 0; i < 20; i++) buffers.push(Buffer.allocUnsafe(20e6).fill(1));
  const faulted = faults() - before;
  buffers = null;
  globalThis.gc();
  console.log(`run ${run}: ${faulted} minor faults, RSS after freeing ${rss()} MB`);
  await new Promise((resolve) => setTimeout(resolve, 1000));
}
await new Promise((resolve) => setTimeout(resolve, 15_000));
console.log(`after 15 s idle: RSS ${rss()} MB`);
