import { statfs } from "node:fs/promises";

/** Bytes free for an unprivileged process on the filesystem holding `dir` (TMP_DIR, STORAGE_LOCAL_DIR). */
export async function diskFreeBytes(dir: string): Promise<number> {
  const fs = await statfs(dir);
  return fs.bavail * fs.bsize;
}
