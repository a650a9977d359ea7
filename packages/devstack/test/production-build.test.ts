// The production build's two guards (docs/running.md, "The image"): scripts/build-dist.mjs, which
// compiles the workspace and refuses an import that the production tree would not have, and
// docker/check-load.mjs, which links every compiled module as the container runs it.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../../", import.meta.url));
const buildDist = join(repo, "scripts/build-dist.mjs");
const checkLoad = join(repo, "docker/check-load.mjs");
const loadFlags = [
  "--conditions=mixdown-dist",
  "--experimental-vm-modules",
  "--experimental-import-meta-resolve",
  "--disable-warning=ExperimentalWarning",
];

const node = (args: string[]) => spawnSync(process.execPath, args, { encoding: "utf8", cwd: repo, timeout: 120_000 });
const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A workspace in a temporary folder: path -> file content (objects are written as JSON). */
function workspace(files: Record<string, string | object>, links: Record<string, string> = {}): string {
  const root = mkdtempSync(join(tmpdir(), "mixdown-build-"));
  dirs.push(root);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), typeof content === "string" ? content : JSON.stringify(content));
  }
  for (const [path, target] of Object.entries(links)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    symlinkSync(target, join(root, path));
  }
  return root;
}

describe("build-dist", () => {
  test("the workspace's dependencies and exports pass its checks", () => {
    const run = node([buildDist, "--check"]);
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /build-dist: \d+ files of \d+ packages checked/);
  });

  test("refuses an import of a devDependency or an undeclared package, and an export without its compiled target; type imports are fine", () => {
    const root = workspace({
      "packages/a/package.json": {
        name: "@mixdown/a",
        type: "module",
        exports: { ".": "./src/index.ts" },
        dependencies: { typebox: "*" },
        devDependencies: { "@mixdown/b": "workspace:*", "@mixdown/types-only": "workspace:*" },
      },
      "packages/a/src/index.ts": [
        `import { b } from "@mixdown/b/sub";`,
        `import type { T } from "@mixdown/types-only";`,
        `import { Type } from "typebox";`,
        `export const a = async (t: T) => [b, Type, t, await import("left-pad")];`,
      ].join("\n"),
    });
    const run = node([buildDist, "--check", "--root", root]);
    assert.equal(run.status, 1);
    assert.match(run.stderr, /build-dist: 3 problem\(s\)/);
    assert.match(run.stderr, /export "\." needs \{ "mixdown-dist": "\.\/dist\/index\.js", "default": "\.\/src\/index\.ts" \}/);
    assert.match(
      run.stderr,
      /packages\/a\/src\/index\.ts imports "@mixdown\/b\/sub", not in @mixdown\/a's dependencies \(a devDependency: move it to dependencies\)/,
    );
    assert.match(run.stderr, /imports "left-pad", not in @mixdown\/a's dependencies\n/);
    assert.doesNotMatch(run.stderr, /types-only|typebox/);
  });
});

describe("check-load", () => {
  test("links the whole compiled workspace, as built by pnpm build", () => {
    const build = node([buildDist]);
    assert.equal(build.status, 0, build.stderr);
    const run = node([...loadFlags, checkLoad, repo]);
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /check-load: \d+ compiled modules linked, \d+ packages and built-ins loaded, the CLI entries ran/);
  });

  test("a compiled module's stack trace names its TypeScript source's line (source maps), as the image runs it", () => {
    assert.equal(node([buildDist]).status, 0);
    const script = `import("@mixdown/config").then((m) => m.loadConfig({ PORT: "not-a-port" })).catch((e) => console.log(e.stack))`;
    const run = spawnSync(
      process.execPath,
      ["--conditions=mixdown-dist", "--enable-source-maps", "--input-type=module", "-e", script],
      {
        encoding: "utf8",
        cwd: join(repo, "apps/api"),
      },
    );
    const frame = /at (?:Module\.)?loadConfig \((.+\/packages\/config\/src\/index\.ts):(\d+):\d+\)/.exec(run.stdout);
    assert.ok(frame, `no TypeScript frame in:\n${run.stdout}${run.stderr}`);
    const line = readFileSync(frame[1]!, "utf8").split("\n")[Number(frame[2]) - 1]!;
    assert.match(line, /throw/, `line ${frame[2]} of index.ts is the throw: ${line}`);
  });

  test("names an import that does not resolve, a missing export, a file not built and a workspace package resolved to its sources", () => {
    const root = workspace(
      {
        "packages/a/package.json": { name: "@mixdown/a", type: "module" },
        "packages/a/dist/index.js": [
          `import { b } from "@mixdown/b";`,
          `import { gone } from "./gone.js";`,
          `export const a = [b, gone];`,
        ].join("\n"),
        "packages/a/dist/lazy.js": `export const load = () => import("missing-package");`,
        "packages/a/dist/names.js": `import { nope } from "./lazy.js";\nexport { nope };`,
        "packages/b/package.json": { name: "@mixdown/b", type: "module", exports: { ".": "./src/index.ts" } },
        "packages/b/src/index.ts": `export const b = 1;`,
        "packages/b/dist/index.js": `export const b = 1;`,
      },
      { "packages/a/node_modules/@mixdown/b": "../../../b" },
    );
    const run = node([...loadFlags, checkLoad, root]);
    assert.equal(run.status, 1);
    assert.match(
      run.stderr,
      /packages\/a\/dist\/index\.js: "@mixdown\/b": resolves to packages\/b\/src\/index\.ts, not to a compiled module/,
    );
    assert.match(
      run.stderr,
      /packages\/a\/dist\/lazy\.js: "missing-package": import\(\) fails: Cannot find package 'missing-package'/,
    );
    assert.match(
      run.stderr,
      /packages\/a\/dist\/names\.js: "\(module\)": The requested module '\.\/lazy\.js' does not provide an export named 'nope'/,
    );
    // The CLI entries a real tree has are run too.
    assert.match(run.stderr, /apps\/cli\/dist\/main\.js: "help": exits/);
  });
});
