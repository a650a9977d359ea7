import { randomUUID } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { access, constants, copyFile, link, mkdir, readdir, rename, rm, stat, unlink } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { PARTIAL_SUFFIX, writeFileAtomically } from "./local-file.ts";
import { SignedUrlCache } from "./signed-url-cache.ts";
import { buildSignedFileUrl } from "./signing.ts";
import {
  assertValidKey,
  contentTypeForKey,
  ObjectNotFoundError,
  type ObjectStorage,
  type PutOptions,
  type StoredObjectInfo,
} from "./types.ts";

export interface LocalDiskStorageOptions {
  /** Directory holding the objects; created when missing. */
  rootDir: string;
  /** Base URL the API is reached at; signed URLs point at its `/files/*` route. */
  publicBaseUrl: string;
  /** HMAC secret for signed URLs (16+ characters). */
  signingSecret: string;
}

const TEMP_SUFFIX = PARTIAL_SUFFIX;

/** Why link(2) refuses where a copy still works: another filesystem, no hard links there, a link limit. */
const LINK_REFUSED = new Set(["EXDEV", "EPERM", "ENOTSUP", "EOPNOTSUPP", "EMLINK", "EACCES"]);

/**
 * Objects as files under one directory. Every write goes to a temporary sibling and is renamed
 * into place, so a reader never sees half an object and a crash leaves only `*.partial-*` files.
 */
export class LocalDiskStorage implements ObjectStorage {
  readonly driver = "local" as const;
  readonly rootDir: string;
  private readonly signed = new SignedUrlCache(({ key, issuedAt, expiresIn }) =>
    buildSignedFileUrl(this.options.publicBaseUrl, this.options.signingSecret, key, issuedAt + expiresIn),
  );

  constructor(private readonly options: LocalDiskStorageOptions) {
    this.rootDir = path.resolve(options.rootDir);
  }

  /** Absolute path of a key's file (the key is validated first). */
  pathFor(key: string): string {
    assertValidKey(key);
    return path.join(this.rootDir, ...key.split("/"));
  }

  private async writeAtomically(key: string, write: (tempPath: string) => Promise<void>): Promise<number> {
    const target = this.pathFor(key);
    await mkdir(path.dirname(target), { recursive: true });
    const temp = `${target}${TEMP_SUFFIX}${randomUUID()}`;
    try {
      await write(temp);
      const { size } = await stat(temp);
      await rename(temp, target);
      return size;
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }

  putStream(key: string, body: Readable, _options?: PutOptions): Promise<number> {
    return this.writeAtomically(key, (temp) => pipeline(body, createWriteStream(temp, { flags: "wx" })));
  }

  putFile(key: string, filePath: string, options?: PutOptions): Promise<number> {
    return this.writeAtomically(key, async (temp) => {
      if (options?.final) {
        try {
          await link(filePath, temp);
          return;
        } catch (error) {
          // another filesystem, or one without hard links: copied as any other file
          if (!LINK_REFUSED.has((error as NodeJS.ErrnoException).code ?? "")) throw error;
        }
      }
      await copyFile(filePath, temp);
    });
  }

  async getStream(key: string): Promise<Readable> {
    const file = this.pathFor(key);
    try {
      await access(file, constants.R_OK);
    } catch {
      throw new ObjectNotFoundError(key);
    }
    return createReadStream(file);
  }

  /** Reads a byte range [start, end] (inclusive), for HTTP Range requests. */
  async getRangeStream(key: string, start: number, end: number): Promise<Readable> {
    const file = this.pathFor(key);
    await access(file, constants.R_OK).catch(() => {
      throw new ObjectNotFoundError(key);
    });
    return createReadStream(file, { start, end });
  }

  async downloadToFile(key: string, filePath: string): Promise<void> {
    await writeFileAtomically(await this.getStream(key), filePath);
  }

  async stat(key: string): Promise<StoredObjectInfo | null> {
    try {
      const s = await stat(this.pathFor(key));
      return s.isFile() ? { size: s.size, contentType: contentTypeForKey(key) } : null;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT" || (error as NodeJS.ErrnoException).code === "ENOTDIR") return null;
      throw error;
    }
  }

  async exists(key: string): Promise<boolean> {
    return (await this.stat(key)) !== null;
  }

  async delete(key: string): Promise<void> {
    try {
      await unlink(this.pathFor(key));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }

  async deleteMany(keys: readonly string[], options: { folders?: readonly string[] } = {}): Promise<void> {
    for (const key of keys) await this.delete(key);
    for (const folder of options.folders ?? []) await this.#removeFolder(folder);
  }

  /**
   * Deletes the objects under `prefix`; a prefix that is a folder (`outputs/stem-split/12/`) goes
   * with its files, so a year of deleted jobs leaves no empty folders behind.
   */
  async deletePrefix(prefix: string): Promise<number> {
    const keys = await this.list(prefix);
    await this.deleteMany(keys, { folders: [prefix] });
    return keys.length;
  }

  /**
   * Removes a folder prefix (`outputs/stem-split/12/`) with whatever is in it. Only a job's own
   * folder is ever named: the shared ones (`uploads/<kind>/`) stay, as a create may be writing there.
   */
  async #removeFolder(prefix: string): Promise<void> {
    if (prefix.length < 2 || !prefix.endsWith("/")) return;
    await rm(this.pathFor(prefix.slice(0, -1)), { recursive: true, force: true });
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    await this.#walk(prefix, (key) => void keys.push(key));
    return keys.sort();
  }

  async forEachObject(prefix: string, visit: (key: string, bytes: number) => void): Promise<void> {
    await this.#walk(prefix, async (key, file) => {
      const info = await stat(file).catch(() => null);
      if (info) visit(key, info.size);
    });
  }

  /** Every stored file whose key starts with `prefix` (a write in progress is not one yet). */
  async #walk(prefix: string, onFile: (key: string, file: string) => void | Promise<void>): Promise<void> {
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
        throw error;
      }
      for (const entry of entries) {
        const key = rel ? `${rel}/${entry.name}` : entry.name;
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) await walk(file, key);
        else if (entry.isFile() && !entry.name.includes(TEMP_SUFFIX) && key.startsWith(prefix)) await onFile(key, file);
      }
    };
    await walk(this.rootDir, "");
  }

  async signedUrl(key: string, ttlSeconds: number): Promise<string> {
    assertValidKey(key);
    return this.signed.get(key, ttlSeconds);
  }

  async ping(): Promise<void> {
    await mkdir(this.rootDir, { recursive: true });
    await access(this.rootDir, constants.R_OK | constants.W_OK);
  }

  async close(): Promise<void> {}
}
