import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot } from "./run-cli.ts";

// What the build writes (`pnpm build`), named by the docs but never committed.
const BUILT = new Set(["apps/web/dist"]);

test("the README and docs/ name only files and folders of the repository that exist", async () => {
  const docs = ["README.md", ...(await readdir(join(repoRoot, "docs"))).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
  const missing: string[] = [];
  let checked = 0;
  for (const doc of docs) {
    const text = await readFile(join(repoRoot, doc), "utf8");
    // `apps/...`, `packages/...`, ... in code spans; a template (`<kind>`, `*`, `{a,b}`) names no one path
    for (const [, path] of text.matchAll(/`((?:apps|packages|prisma|models|docker)\/[^`\s]*)`/g)) {
      if (/[<>*{}]/.test(path!)) continue;
      const clean = path!.replace(/[/:.,]+$/, "");
      if (BUILT.has(clean)) continue;
      checked++;
      if (!existsSync(join(repoRoot, clean))) missing.push(`${doc}: ${clean}`);
    }
  }
  assert.ok(checked > 50, `only ${checked} paths found: the pattern no longer matches the docs`);
  assert.deepEqual(missing, []);
});
