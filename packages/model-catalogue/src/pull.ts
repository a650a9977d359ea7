import { copyFile, mkdir, rename, rm, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import lockfile from "proper-lockfile";
import {
  downloadFile,
  DownloadError,
  verifyFile,
  withMirror,
  type DownloadProgress,
  type ExpectedFile,
} from "@mixdown/downloads";
import { installedEntries, type CatalogueEntry, type VoiceAssetPaths } from "./catalogue.ts";

// Pulling a catalogue entry: download each file (resumable, through MIXDOWN_MODEL_MIRROR), verify it
// against what the entry publishes, install it with the family's importer. `./mixdown.sh models
// pull` and the worker's `model-install` jobs both run this, so an install from the dashboard is
// checked exactly as one from the command line.

/** Where verified downloads wait for their import, inside the models directory (never read as models). */
export const downloadsDir = (modelsDir: string) => join(modelsDir, ".downloads");

/** One download's progress as it goes, and its end. */
export interface PullProgress {
  update(progress: DownloadProgress): void;
  stop(): void;
}

export interface PullContext {
  modelsDir: string;
  assets: VoiceAssetPaths;
  /** MIXDOWN_MODEL_MIRROR */
  mirror?: string | undefined;
  /** The environment of the converters' child processes (Python); this process's when absent. */
  env?: Record<string, string | undefined>;
  /** progress and notes */
  log: (line: string) => void;
  /** How one file's download shows its progress (a terminal's bar, a job's percentage); none when absent. */
  progress?: (file: string) => PullProgress;
  force?: boolean;
  /** Stops a download or a conversion under way. */
  signal?: AbortSignal;
}

export class PullProblem extends Error {
  override readonly name = "PullProblem";
}

const MB = 1024 * 1024;
const megabytes = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;
const quietProgress: PullProgress = { update: () => {}, stop: () => {} };

/** Downloads one file into `dir` (verified, resumable); a verified copy already there is kept. */
export async function fetchVerified(
  url: string,
  dir: string,
  name: string,
  expect: ExpectedFile,
  ctx: PullContext,
): Promise<{ path: string; sha256: string; downloaded: boolean }> {
  const target = join(dir, name);
  const unchecked =
    expect.sha256 == null && expect.sha256Prefix === undefined && expect.uvrHash === undefined && expect.md5 === undefined;
  if (await stat(target).catch(() => undefined)) {
    try {
      const ok = await verifyFile(target, expect);
      // Unchecked files are fetched again: what is there may be from another URL.
      if (!unchecked) return { path: target, sha256: ok.sha256, downloaded: false };
    } catch {
      // fetched again below
    }
    await rm(target, { force: true });
  }
  const from = withMirror(url, ctx.mirror);
  ctx.log(`downloading ${from}`);
  const progress = ctx.progress?.(name) ?? quietProgress;
  try {
    const got = await downloadFile({
      url: from,
      target,
      expect,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      onProgress: progress.update,
      log: (line) => {
        progress.stop();
        ctx.log(line);
      },
    });
    progress.stop();
    const checks = [
      expect.sizeBytes != null ? "size" : "",
      expect.sha256 != null ? "SHA-256" : "",
      expect.sha256Prefix ? "SHA-256 prefix" : "",
      expect.uvrHash ? "UVR hash" : "",
      expect.md5 ? "MD5" : "",
    ].filter(Boolean);
    ctx.log(
      `${name}: ${megabytes(got.sizeBytes)}${got.resumedFrom ? ` (resumed at ${megabytes(got.resumedFrom)})` : ""}, ` +
        (checks.length ? `verified (${checks.join(", ")})` : `NOT verified (nothing published to check it by)`) +
        `; sha256 ${got.sha256}`,
    );
    return { path: target, sha256: got.sha256, downloaded: true };
  } catch (err) {
    progress.stop();
    if (err instanceof DownloadError) throw new PullProblem(err.message);
    throw err;
  }
}

/** Pulls one catalogue entry: downloads and verifies each file, then installs it with the existing importers. */
export async function pullEntry(entry: CatalogueEntry, ctx: PullContext): Promise<string> {
  const { release, waited } = await lockEntry(entry, ctx);
  try {
    if (waited && (await installedEntries({ version: 1, models: [entry] }, ctx.modelsDir, ctx.assets)).has(entry.name))
      return `${entry.name} was installed meanwhile, by another process`;
    return await pullLocked(entry, ctx);
  } finally {
    await release().catch(() => undefined);
  }
}

/** How often a held install lock is touched, and how long an untouched one lasts (its holder died). */
const LOCK_UPDATE_MS = 5_000;
const LOCK_STALE_MS = 30_000;

/**
 * One install of an entry at a time in a models directory, whoever runs it: `models pull`, a
 * worker's model install, a container's entrypoint, on one machine or on several sharing the
 * volume. Two at once would write the same partial downloads and one would delete the other's
 * staging folder. The lock is a directory (`.downloads/<name>.install.lock`, proper-lockfile:
 * atomic `mkdir`, as safe on a shared volume as on a local disk), touched while held; one left by
 * a process that died is taken over once LOCK_STALE_MS old. A second install waits for the first.
 */
async function lockEntry(entry: CatalogueEntry, ctx: PullContext): Promise<{ release: () => Promise<void>; waited: boolean }> {
  const dir = downloadsDir(ctx.modelsDir);
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${entry.name}.install`);
  let waited = false;
  for (;;) {
    ctx.signal?.throwIfAborted();
    try {
      const release = await lockfile.lock(file, {
        realpath: false,
        stale: LOCK_STALE_MS,
        update: LOCK_UPDATE_MS,
        // Not touched in time (a stalled disk): say so; the install goes on.
        onCompromised: (err) => ctx.log(`${entry.name}: the install lock was lost (${err.message})`),
      });
      return { release, waited };
    } catch (err) {
      if ((err as { code?: string }).code !== "ELOCKED") throw err;
      if (!waited) ctx.log(`${entry.name}: another process is installing it; waiting for it to end`);
      waited = true;
      // Cancelled while waiting: the cancel's own reason, as a download's stop gives it.
      await sleep(1000, undefined, ctx.signal ? { signal: ctx.signal } : undefined).catch(() => ctx.signal?.throwIfAborted());
    }
  }
}

async function pullLocked(entry: CatalogueEntry, ctx: PullContext): Promise<string> {
  const staging = join(downloadsDir(ctx.modelsDir), entry.name);
  await mkdir(staging, { recursive: true });
  const paths = new Map<string, string>();
  for (const file of entry.files) {
    ctx.signal?.throwIfAborted();
    const got = await fetchVerified(file.url, staging, file.name, file, ctx);
    paths.set(file.name, got.path);
  }
  ctx.signal?.throwIfAborted();
  const importFile = paths.get(entry.importFile)!;
  const summary = await install(entry, importFile, entry.importConfig ? paths.get(entry.importConfig) : undefined, ctx);
  // Installed: the originals are not needed any more. On a failure they stay, verified, for the next try.
  await rm(staging, { recursive: true, force: true });
  return summary;
}

async function install(entry: CatalogueEntry, file: string, config: string | undefined, ctx: PullContext): Promise<string> {
  const hooks = {
    log: ctx.log,
    env: ctx.env ?? process.env,
    python: async () => (await import("@mixdown/python")).ensurePyTorch(ctx.log, ctx.env ?? process.env),
  };
  if (entry.family === "contentvec") {
    const { importContentVec } = await import("@mixdown/voice/import-features");
    const { installed } = await importContentVec(file, { v2: ctx.assets.contentVec, v1: ctx.assets.contentVecV1 }, hooks);
    return `installed ${entry.name}: ${installed.join(", ")}`;
  }
  if (entry.family === "piper") {
    if (!config) throw new PullProblem(`${entry.name}: a Piper voice needs its config (importConfig)`);
    return installPiperVoice(entry.name, file, config, ctx.assets.piperVoices);
  }
  if (entry.family === "rmvpe") {
    const { importRmvpe } = await import("@mixdown/voice/import-pitch");
    await importRmvpe(file, ctx.assets.rmvpe, hooks);
    return `installed ${entry.name}: ${ctx.assets.rmvpe}`;
  }
  return importSeparation(file, config, entry.name, entry.mdx ?? {}, ctx);
}

/**
 * Installs a Piper voice (`<name>.onnx` and its `.onnx.json`) in the Piper voices directory
 * (TTS_PIPER_DIR) once onnxruntime has loaded it with its config as a Piper voice.
 */
export async function installPiperVoice(label: string, model: string, config: string, dir: string): Promise<string> {
  const { PiperVoice, PiperVoiceError } = await import("@mixdown/voice/piper");
  const voice = await PiperVoice.load(model, { configPath: config }).catch((err: unknown) => {
    throw err instanceof PiperVoiceError ? new PullProblem(err.message) : err;
  });
  const language = voice.espeakVoice;
  const rate = voice.sampleRate;
  await voice.release();
  await mkdir(dir, { recursive: true });
  const target = join(dir, basename(model));
  // The config lands first: a model without its config is not listed as a voice.
  await copyFile(config, `${target}.json.partial`);
  await copyFile(model, `${target}.partial`);
  await rename(`${target}.json.partial`, `${target}.json`);
  await rename(`${target}.partial`, target);
  return `installed ${label}: ${target} (Piper voice, espeak-ng ${language}, ${rate} Hz)`;
}

export interface MdxGeometry {
  nFft?: number | undefined;
  dimF?: number | undefined;
  dimT?: number | undefined;
  compensate?: number | undefined;
  primaryStem?: string | undefined;
}

export async function importSeparation(
  file: string,
  config: string | undefined,
  name: string | undefined,
  mdx: MdxGeometry,
  ctx: PullContext,
  modelData?: string,
): Promise<string> {
  const { importModel, ImportProblem, TorchFileError } = await import("@mixdown/separation/import");
  try {
    const imported = await importModel({
      file,
      modelsDir: ctx.modelsDir,
      ...(config !== undefined ? { config } : {}),
      ...(name !== undefined ? { name } : {}),
      ...(modelData !== undefined ? { modelData } : {}),
      force: ctx.force ?? false,
      mdx,
      log: ctx.log,
      env: (ctx.env ?? process.env) as NodeJS.ProcessEnv,
    });
    return (
      `installed ${imported.name} (${imported.family}; stems ${imported.stems.join(", ")}) in ${ctx.modelsDir}: ` +
      `${imported.check.realtime.toFixed(1)}x realtime on the ${imported.check.seconds} s check`
    );
  } catch (err) {
    if (err instanceof ImportProblem || err instanceof TorchFileError) throw new PullProblem(`cannot import: ${err.message}`);
    throw err;
  }
}
