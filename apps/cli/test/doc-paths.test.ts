import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot } from "./run-cli.ts";

// What the build writes (`pnpm build`), named by the docs but never committed.
const BUILT = new Set(["apps/web/dist"]);

// The top-level folders a repository path starts with. The docs' code spans leave `docs/` out
// because they also name upstream projects' files (MSST's `docs/pretrained_models.md`).
const CODE_SPAN_PATH = /`((?:apps|packages|prisma|models|docker)\/[^`\s]*)`/g;
// A package's or app's README names its own files from its folder.
const OWN_CODE_SPAN_PATH = /`((?:src|scripts|test|python)\/[^`\s]*)`/g;
// The env examples' comments are prose: a path is any word that starts at a top-level folder.
const PROSE_PATH = /(?<![\w./-])((?:apps|packages|prisma|models|docker|docs)\/[^\s`'"]*)/g;

/** Which of `paths` (relative to `base` in the repository) do not exist, each as `doc: path`. */
function missingPaths(doc: string, paths: Iterable<string>, base: string, count: { checked: number }): string[] {
  const missing: string[] = [];
  for (const path of paths) {
    // a template (`<kind>`, `*`, `{a,b}`) names no one path
    if (/[<>*{}]/.test(path)) continue;
    const clean = join(base, path.replace(/[/:.,)]+$/, ""));
    if (BUILT.has(clean)) continue;
    count.checked++;
    if (!existsSync(join(repoRoot, clean))) missing.push(`${doc}: ${clean}`);
  }
  return missing;
}

const matches = (text: string, pattern: RegExp) => [...text.matchAll(pattern)].map((m) => m[1]!);

async function listDir(dir: string): Promise<string[]> {
  return (await readdir(join(repoRoot, dir))).map((name) => `${dir}/${name}`);
}

test("the README, docs/ and every package's and app's README name only files and folders of the repository that exist", async () => {
  const guides = ["README.md", ...(await listDir("docs")).filter((f) => f.endsWith(".md"))];
  const units = [...(await listDir("packages")), ...(await listDir("apps"))].filter((dir) =>
    existsSync(join(repoRoot, dir, "README.md")),
  );
  const count = { checked: 0 };
  const missing: string[] = [];
  for (const doc of [...guides, ...units.map((dir) => `${dir}/README.md`)]) {
    missing.push(...missingPaths(doc, matches(await readFile(join(repoRoot, doc), "utf8"), CODE_SPAN_PATH), "", count));
  }
  for (const dir of units) {
    const doc = `${dir}/README.md`;
    missing.push(...missingPaths(doc, matches(await readFile(join(repoRoot, doc), "utf8"), OWN_CODE_SPAN_PATH), dir, count));
  }
  assert.ok(count.checked > 100, `only ${count.checked} paths found: the patterns no longer match the docs`);
  assert.deepEqual(missing, []);
});

test("the env examples' comments name only files and folders of the repository that exist", async () => {
  const examples = [".env.example", ...(await listDir("docker")).filter((f) => f.endsWith(".env.example"))];
  const count = { checked: 0 };
  const missing: string[] = [];
  for (const example of examples) {
    const lines = (await readFile(join(repoRoot, example), "utf8")).split("\n");
    const comments = lines.filter((line) => line.startsWith("#")).join("\n");
    missing.push(...missingPaths(example, matches(comments, PROSE_PATH), "", count));
  }
  assert.ok(count.checked >= 10, `only ${count.checked} paths found: the pattern no longer matches the env examples`);
  assert.deepEqual(missing, []);
});
