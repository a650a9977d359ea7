import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "@mixdown/config";
import { buildApp } from "./app.ts";

/** The committed copy @mixdown/kits-client's types are generated from. */
export const KITS_CLIENT_OPENAPI_PATH = fileURLToPath(new URL("../../../packages/kits-client/openapi.json", import.meta.url));

/**
 * The OpenAPI document of a deployment with the default settings (local storage, default upload
 * limits), as `/docs/json` serves it, in stable JSON: what @mixdown/kits-client is generated from.
 * Builds the app without listening; nothing connects (Postgres and Redis are never reached).
 */
export async function renderOpenApiDocument(): Promise<string> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), "mixdown-openapi-"));
  try {
    const app = await buildApp(
      loadConfig({
        DATABASE_URL: "postgresql://mixdown@127.0.0.1:9/openapi",
        REDIS_URL: "redis://127.0.0.1:9",
        STORAGE_DRIVER: "local",
        STORAGE_LOCAL_DIR: path.join(scratch, "storage"),
        TMP_DIR: path.join(scratch, "tmp"),
        SIGNED_URL_SECRET: "openapi-document-only-secret",
        LOG_LEVEL: "silent",
      }),
    );
    try {
      await app.ready();
      return `${JSON.stringify(app.swagger(), null, 2)}\n`;
    } finally {
      await app.close();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
