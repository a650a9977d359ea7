import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The checkout this CLI belongs to; `pnpm mixdown` runs from here. */
export const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

/**
 * Where `mixdown up` keeps its state: `.mixdown/` in the checkout unless `MIXDOWN_HOME` says
 * otherwise. Layout: `postgres/` (cluster), `redis/` (AOF), `storage/` (objects), `secret`
 * (SIGNED_URL_SECRET), `stack.json` (what the running `up` serves, for other commands).
 */
export function stateDir(env: Record<string, string | undefined>): string {
  return path.resolve(repoRoot, env.MIXDOWN_HOME ?? ".mixdown");
}

export interface RunningStackInfo {
  pid: number;
  databaseUrl: string;
  redisUrl: string;
  baseUrl: string;
}

export function writeStackInfo(dir: string, info: RunningStackInfo): void {
  writeFileSync(path.join(dir, "stack.json"), `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
}

export function removeStackInfo(dir: string): void {
  rmSync(path.join(dir, "stack.json"), { force: true });
}

/** The stack a `mixdown up` in this checkout is serving right now, if any. */
export function readRunningStack(dir: string): RunningStackInfo | null {
  const file = path.join(dir, "stack.json");
  if (!existsSync(file)) return null;
  try {
    const info = JSON.parse(readFileSync(file, "utf8")) as RunningStackInfo;
    process.kill(info.pid, 0);
    return info;
  } catch {
    return null;
  }
}

/** A SIGNED_URL_SECRET generated on first use and kept, so signed links survive restarts. */
export function persistentSecret(dir: string): string {
  const file = path.join(dir, "secret");
  if (existsSync(file)) {
    const secret = readFileSync(file, "utf8").trim();
    if (secret.length >= 16) return secret;
  }
  mkdirSync(dir, { recursive: true });
  const secret = randomBytes(32).toString("base64url");
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}
