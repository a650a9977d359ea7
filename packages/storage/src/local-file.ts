import { randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";

/** Suffix of files still being written; never a finished file's name. */
export const PARTIAL_SUFFIX = ".partial-";

/** Writes a stream to `filePath` through a temp file and a rename, so a reader never sees half a file. */
export async function writeFileAtomically(source: Readable, filePath: string): Promise<void> {
  await mkdir(path.dirname(path.resolve(filePath)), { recursive: true });
  const temp = `${filePath}${PARTIAL_SUFFIX}${randomUUID()}`;
  try {
    await pipeline(source, createWriteStream(temp));
    await rename(temp, filePath);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
