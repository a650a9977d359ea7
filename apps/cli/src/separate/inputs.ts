import { readdir, realpath, stat } from "node:fs/promises";
import { basename, extname, join, relative, resolve, sep } from "node:path";
import { sniffAudioFile } from "@mixdown/audio";

/** One file `mixdown separate` will separate, and where its stems go. */
export interface SeparationInput {
  /** absolute */
  path: string;
  /** how lines name it: its path under the folder it was found in, or its file name */
  label: string;
  /** the folder its stems are written to (absolute) */
  outDir: string;
}

/** A file found in a folder whose first bytes are none of the audio formats an upload may be. */
export interface NotAudioFile {
  label: string;
  what: string;
}

export class InputProblem extends Error {}

interface Candidate {
  path: string;
  /** relative path that names its output folder */
  relativePath: string;
}

/** A folder's files, recursively, in name order; hidden files and folders (.DS_Store, .git) and anything under `outRoot` left out. */
async function filesUnder(dir: string, outRoot: string): Promise<Candidate[]> {
  const found: Candidate[] = [];
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const relativePath = relative(dir, path);
    if (relativePath.split(sep).some((part) => part.startsWith("."))) continue;
    if (path === outRoot || path.startsWith(outRoot + sep)) continue;
    // a link to a file counts as the file; links to folders are not followed (no cycles)
    if (!(entry.isFile() || (entry.isSymbolicLink() && (await stat(path).catch(() => null))?.isFile()))) continue;
    found.push({ path, relativePath });
  }
  return found.sort((a, b) => (a.relativePath < b.relativePath ? -1 : a.relativePath > b.relativePath ? 1 : 0));
}

function withoutExtension(relativePath: string): string {
  const ext = extname(relativePath);
  return ext && ext !== relativePath ? relativePath.slice(0, -ext.length) : relativePath;
}

/**
 * The files `mixdown separate` was given: each argument a file or a folder, searched recursively.
 * A folder's files are taken when their first bytes are wav, mp3, flac or webm audio, decided as the
 * API decides an upload's format (`sniffAudioFile`); the others are listed in `notAudio`. A file
 * named on the command line is always tried (ffmpeg may read more than an upload may be), and fails
 * like any file that does not decode.
 *
 * Each input's stems go to `<out>/<its path under its folder, extension dropped>/` (a named file's:
 * `<out>/<its name, extension dropped>/`), so two `song.wav` in different folders do not meet; where
 * two inputs still would (`song.wav` beside `song.flac`), those keep their extension. One file
 * alone, no folder, writes straight into `<out>`, as the command always has.
 */
export async function collectInputs(
  args: readonly string[],
  out: string,
): Promise<{ inputs: SeparationInput[]; notAudio: NotAudioFile[] }> {
  const outRoot = resolve(out);
  const candidates: Array<Candidate & { named: boolean }> = [];
  for (const arg of args) {
    const path = resolve(arg);
    const stats = await stat(path).catch((error: NodeJS.ErrnoException) => {
      throw new InputProblem(error.code === "ENOENT" ? `${arg}: no such file or folder` : `${arg}: ${error.message}`);
    });
    if (stats.isDirectory()) candidates.push(...(await filesUnder(path, outRoot)).map((c) => ({ ...c, named: false })));
    else candidates.push({ path, relativePath: basename(path), named: true });
  }

  const seen = new Set<string>();
  const notAudio: NotAudioFile[] = [];
  const audio: Candidate[] = [];
  for (const candidate of candidates) {
    const real = await realpath(candidate.path);
    if (seen.has(real)) continue;
    seen.add(real);
    if (!candidate.named) {
      const format = await sniffAudioFile(candidate.path);
      if (format === null || format === "matroska") {
        const what = format === "matroska" ? "Matroska, not WebM" : "not wav, mp3, flac or webm by its content";
        notAudio.push({ label: candidate.relativePath, what });
        continue;
      }
    }
    audio.push(candidate);
  }

  const single = args.length === 1 && candidates.length === 1 && candidates[0]!.named;
  if (single) return { inputs: audio.map((c) => ({ path: c.path, label: c.relativePath, outDir: outRoot })), notAudio };

  const folderOf = (c: Candidate) => join(outRoot, withoutExtension(c.relativePath));
  const sharing = new Map<string, number>();
  for (const c of audio) sharing.set(folderOf(c), (sharing.get(folderOf(c)) ?? 0) + 1);
  const inputs = audio.map((c) => ({
    path: c.path,
    label: c.relativePath,
    outDir: sharing.get(folderOf(c))! > 1 ? join(outRoot, c.relativePath) : folderOf(c),
  }));
  const byFolder = new Map<string, SeparationInput>();
  for (const input of inputs) {
    const other = byFolder.get(input.outDir);
    if (other)
      throw new InputProblem(
        `${other.path} and ${input.path} would both write to ${input.outDir}: separate them with different --out folders`,
      );
    byFolder.set(input.outDir, input);
  }
  return { inputs, notAudio };
}
