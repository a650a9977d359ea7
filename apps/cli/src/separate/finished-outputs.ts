import { isDeepStrictEqual } from "node:util";
import { mkdir, readdir, readFile, rename, rm, rmdir, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join, sep } from "node:path";
// the module alone: the package's index loads PostgreSQL's, Redis's and S3's starters
import { isAlive } from "@mixdown/devstack/processes";

// How `mixdown separate` resumes. An input's stems are written into a hidden folder inside its
// output folder, named after the process; only once every stem is complete are they renamed into
// the output folder, and then the record of what was made (MARKER) is written, last. A rerun
// skips an input whose record matches the run's settings and the input as it is now, with every
// stem it lists present: a file cut off by Ctrl-C, a kill or a crash has no record, or an old
// one (removed before the first rename), and is separated again. The hidden folders of runs that
// are no longer alive are removed when the next run starts; a Ctrl-C removes its own at once.

const MARKER = ".mixdown-separate.json";
const PARTIAL_PREFIX = ".mixdown-partial-";

/** What decides the stems' content: a rerun with other settings separates the input again. */
export interface OutputSettings {
  models: string[];
  ensemble: string | null;
  format: string;
  stems: string[] | null;
  overlap: number | null;
  shifts: number | null;
}

interface Marker {
  input: { name: string; size: number; mtimeMs: number };
  settings: OutputSettings;
  /** stem → file name in the output folder */
  files: Record<string, string>;
}

async function inputIdentity(inputPath: string): Promise<Marker["input"]> {
  const { size, mtimeMs } = await stat(inputPath);
  return { name: basename(inputPath), size, mtimeMs };
}

/** The stems (stem → path) a finished earlier run made of `inputPath` in `outDir` with these settings, or null. */
export async function finishedOutputs(
  inputPath: string,
  outDir: string,
  settings: OutputSettings,
): Promise<Record<string, string> | null> {
  let marker: Marker;
  try {
    marker = JSON.parse(await readFile(join(outDir, MARKER), "utf8")) as Marker;
  } catch {
    return null;
  }
  if (!isDeepStrictEqual(marker.settings, settings)) return null;
  if (!isDeepStrictEqual(marker.input, await inputIdentity(inputPath))) return null;
  const files = Object.entries(marker.files ?? {});
  if (files.length === 0) return null;
  for (const [, name] of files) if (!(await stat(join(outDir, name)).catch(() => null))?.isFile()) return null;
  return Object.fromEntries(files.map(([stem, name]) => [stem, join(outDir, name)]));
}

/** Removes a hidden working folder, and the folders above it up to `outRoot` that it leaves empty. */
async function removePartial(partialDir: string, outRoot: string): Promise<void> {
  await rm(partialDir, { recursive: true, force: true });
  try {
    for (let dir = dirname(partialDir); dir.startsWith(outRoot + sep); dir = dirname(dir)) await rmdir(dir);
  } catch {
    // not empty: the folders from here up hold other outputs
  }
}

/**
 * Removes, anywhere under `outRoot`, the working folders of earlier runs that are not running any
 * more (a killed or crashed run's; a run going on beside this one keeps its own). Returns how many.
 */
export async function removeLeftovers(outRoot: string): Promise<number> {
  const entries = await readdir(outRoot, { recursive: true, withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return [];
    throw error;
  });
  let removed = 0;
  for (const entry of entries) {
    if (!entry.isDirectory() || !entry.name.startsWith(PARTIAL_PREFIX)) continue;
    const pid = Number(entry.name.slice(PARTIAL_PREFIX.length));
    if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) continue;
    await removePartial(join(entry.parentPath, entry.name), outRoot);
    removed++;
  }
  return removed;
}

/** The hidden folder one input's stems are written to before they count. */
export class PartialOutput {
  readonly dir: string;

  private constructor(
    readonly outDir: string,
    private readonly outRoot: string,
  ) {
    this.dir = join(outDir, `${PARTIAL_PREFIX}${process.pid}`);
  }

  /** `outDir` is under `outRoot` (or is it): the folders the partial one leaves empty are removed up to there. */
  static async create(outDir: string, outRoot: string): Promise<PartialOutput> {
    const partial = new PartialOutput(outDir, outRoot);
    await rm(partial.dir, { recursive: true, force: true });
    await mkdir(partial.dir, { recursive: true });
    return partial;
  }

  /**
   * Moves the finished stems (stem → path inside `dir`) into the output folder and writes the
   * record last; returns stem → final path. The old record goes first, so an output folder half
   * way between two runs' stems is never taken as done.
   */
  async commit(inputPath: string, settings: OutputSettings, stems: Record<string, string>): Promise<Record<string, string>> {
    await rm(join(this.outDir, MARKER), { force: true });
    const files: Record<string, string> = {};
    for (const [stem, path] of Object.entries(stems)) {
      await rename(path, join(this.outDir, basename(path)));
      files[stem] = basename(path);
    }
    const marker: Marker = { input: await inputIdentity(inputPath), settings, files };
    const markerPath = join(this.dir, MARKER);
    await writeFile(markerPath, `${JSON.stringify(marker, null, 2)}\n`);
    await rename(markerPath, join(this.outDir, MARKER));
    await rm(this.dir, { recursive: true, force: true });
    return Object.fromEntries(Object.entries(files).map(([stem, name]) => [stem, join(this.outDir, name)]));
  }

  discard(): Promise<void> {
    return removePartial(this.dir, this.outRoot);
  }
}
