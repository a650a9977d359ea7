import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** frames per block read back: 64 Ki stereo frames, 512 KiB */
const REPLAY_FRAMES = 1 << 16;

/**
 * Reads a one-shot stream once, handing it to `consume` while writing it to a temporary file,
 * so it can be read again with memory that does not grow with its length: for callers of the
 * engine that cannot reopen their input (a family that needs two passes asks for `reopen` first).
 */
export async function spooledInput<T>(
  input: AsyncIterable<Float32Array>,
  consume: (pass: AsyncIterable<Float32Array>) => Promise<T>,
): Promise<{ result: T; replay: () => AsyncIterable<Float32Array>; dispose: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "mixdown-htdemucs-"));
  const path = join(dir, "input.f32");
  const dispose = () => rm(dir, { recursive: true, force: true });
  try {
    const file = await open(path, "w");
    let result: T;
    try {
      result = await consume(
        (async function* () {
          for await (const block of input) {
            await file.write(new Uint8Array(block.buffer, block.byteOffset, block.byteLength));
            yield block;
          }
        })(),
      );
    } finally {
      await file.close();
    }
    const replay = async function* () {
      const reader = await open(path, "r");
      try {
        const buffer = new Float32Array(REPLAY_FRAMES * 2);
        const bytes = new Uint8Array(buffer.buffer);
        while (true) {
          const { bytesRead } = await reader.read(bytes, 0, bytes.length, null);
          if (bytesRead === 0) return;
          yield buffer.slice(0, Math.floor(bytesRead / 4));
        }
      } finally {
        await reader.close();
      }
    };
    return { result, replay, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}
