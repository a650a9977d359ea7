import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { open, stat } from "node:fs/promises";

/** What a file is known to be; every check given must hold. */
export interface ExpectedFile {
  sizeBytes?: number | null;
  /** the whole file's SHA-256, lowercase hex */
  sha256?: string | null;
  /** the first hex digits of its SHA-256 (demucs names each checkpoint `<sig>-<first 8 hex>.th`) */
  sha256Prefix?: string;
  /**
   * UVR's model hash, the key of its model_data.json: MD5 of the file's last 10,000 KiB, or of the
   * whole file when it is shorter (UVR's `get_model_hash`).
   */
  uvrHash?: string;
  /** the whole file's MD5, lowercase hex (Piper's voices.json publishes only this and the size) */
  md5?: string;
}

export interface VerifiedFile {
  sizeBytes: number;
  sha256: string;
}

const UVR_TAIL_BYTES = 10_000 * 1024;

/** UVR's hash of a model file (see ExpectedFile.uvrHash). */
export async function uvrModelHash(path: string): Promise<string> {
  const { size } = await stat(path);
  const start = Math.max(0, size - UVR_TAIL_BYTES);
  const md5 = createHash("md5");
  for await (const chunk of createReadStream(path, { start })) md5.update(chunk as Buffer);
  return md5.digest("hex");
}

export async function sha256File(path: string): Promise<string> {
  const sha = createHash("sha256");
  for await (const chunk of createReadStream(path)) sha.update(chunk as Buffer);
  return sha.digest("hex");
}

/** Checks a file against what is expected of it; throws an Error saying expected vs got. */
export async function verifyFile(path: string, expect: ExpectedFile): Promise<VerifiedFile> {
  const handle = await open(path, "r");
  const { size } = await handle.stat().finally(() => handle.close());
  if (expect.sizeBytes != null && size !== expect.sizeBytes)
    throw new Error(`size mismatch: expected ${expect.sizeBytes} bytes, got ${size}`);
  const sha256 = await sha256File(path);
  if (expect.sha256 != null && sha256 !== expect.sha256.toLowerCase())
    throw new Error(`SHA-256 mismatch: expected ${expect.sha256.toLowerCase()}, got ${sha256}`);
  if (expect.sha256Prefix !== undefined && !sha256.startsWith(expect.sha256Prefix.toLowerCase()))
    throw new Error(`SHA-256 mismatch: expected it to start with ${expect.sha256Prefix.toLowerCase()}, got ${sha256}`);
  if (expect.uvrHash !== undefined) {
    const got = await uvrModelHash(path);
    if (got !== expect.uvrHash.toLowerCase())
      throw new Error(`UVR model hash mismatch: expected ${expect.uvrHash.toLowerCase()}, got ${got}`);
  }
  if (expect.md5 !== undefined) {
    const md5 = createHash("md5");
    for await (const chunk of createReadStream(path)) md5.update(chunk as Buffer);
    const got = md5.digest("hex");
    if (got !== expect.md5.toLowerCase()) throw new Error(`MD5 mismatch: expected ${expect.md5.toLowerCase()}, got ${got}`);
  }
  return { sizeBytes: size, sha256 };
}
