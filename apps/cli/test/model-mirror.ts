import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";

// The mirror, its catalogue and files are the model catalogue's testing helpers (the worker's and
// the dashboard's install tests serve the same); the folders are this suite's.
export { catalogue, files, mirror, rmvpe, sha, vocals } from "@mixdown/model-catalogue/testing";

const folders: string[] = [];
after(() => Promise.all(folders.map((f) => rm(f, { recursive: true, force: true }))));

export async function folder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "mixdown-cli-pull-"));
  folders.push(dir);
  return dir;
}
