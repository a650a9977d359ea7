/// <reference path="./s3rver.d.ts" />
import { mkdir, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import path from "node:path";
import S3rver from "s3rver";
import { scratchDir } from "./processes.ts";

export interface S3Options {
  bucket: string;
  /** Where objects are kept. Default: a temp dir, deleted on stop. */
  dir?: string;
  /** Default: a free port. */
  port?: number;
}

export interface RunningS3 {
  /** `http://127.0.0.1:<port>`; use path-style addressing. */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  stop(): Promise<void>;
  /**
   * Stops serving, for outage tests: the port is closed and every open connection cut (requests
   * in flight included), as when the server restarts or the network drops. Objects are kept.
   */
  halt(): Promise<void>;
  /** Serves again on the same port and directory. */
  resume(): Promise<void>;
}

/** s3rver accepts only its built-in account. */
const S3RVER_CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };

/** An in-process S3-compatible server (s3rver) with `bucket` created. */
export async function startS3(options: S3Options): Promise<RunningS3> {
  const ephemeral = options.dir === undefined;
  const dir = options.dir ? path.resolve(options.dir) : await scratchDir();
  await mkdir(dir, { recursive: true });
  const serve = async (port: number) => {
    const server = new S3rver({
      address: "127.0.0.1",
      port,
      directory: dir,
      silent: true,
      configureBuckets: [{ name: options.bucket }],
    });
    const address = (await server.run()) as AddressInfo;
    return { server, port: address.port };
  };
  const close = async (server: S3rver) => {
    const closed = server.close();
    server.httpServer?.closeAllConnections();
    await closed;
  };
  let { server, port } = await serve(options.port ?? 0);
  let halted = false;
  let stopped: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket: options.bucket,
    region: "us-east-1",
    ...S3RVER_CREDENTIALS,
    async halt() {
      if (halted) return;
      halted = true;
      await close(server);
    },
    async resume() {
      if (!halted) return;
      // A fresh instance: a closed s3rver has closed its logger for good.
      ({ server } = await serve(port));
      halted = false;
    },
    stop() {
      stopped ??= (async () => {
        if (!halted) await close(server);
        halted = true;
        if (ephemeral) await rm(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}
