// Run by allocator.test.ts in a process of its own: which allocator it runs on, whether sessions
// get onnxruntime's arena, and one run of the default vocal model on a fixed input (its output's
// bytes hashed), printed as one JSON line.
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { openSession } from "../../src/inference-options.ts";
import { cpuArenaEnabled, runsOnJemalloc } from "../../src/allocator.ts";

const onnx = fileURLToPath(new URL("../../../../models/vocals.onnx", import.meta.url));
const session = await openSession(onnx, { intraOpThreads: 1, thread: false });
const dims = [1, 4, 1024, 256];
const input = new Float32Array(dims.reduce((a, b) => a * b));
for (let i = 0; i < input.length; i++) input[i] = Math.sin(i * 0.001) * 0.5;
const hashes: string[] = [];
for (let run = 0; run < 2; run++) {
  const { data: output } = await session.run(session.inputNames[0]!, input, dims, session.outputNames[0]!);
  hashes.push(
    createHash("sha256")
      .update(new Uint8Array(output.buffer, output.byteOffset, output.byteLength))
      .digest("hex"),
  );
}
await session.release();
console.log(JSON.stringify({ jemalloc: runsOnJemalloc(), arena: cpuArenaEnabled(), hashes }));
