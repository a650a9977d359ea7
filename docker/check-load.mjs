// The image build's guard (docker/Dockerfile runs it in the production stage, as the container runs):
// every compiled module of every workspace package (apps/*/dist, packages/*/dist: the entry points,
// their worker threads, what they import lazily) is parsed and linked, with each import resolved as
// Node resolves it at run time (the production tree, --conditions=mixdown-dist), without running
// any of Mixdown's own code. It fails, naming the file and the import, when:
// - an import does not resolve (a workspace or npm package missing from the importing package's
//   dependencies, so absent from its node_modules in the production tree; a file not built);
// - a workspace package resolves to its TypeScript sources instead of dist/ (an export without its
//   "mixdown-dist" target);
// - a named import is not exported by the module (a CommonJS package whose names Node cannot see);
// - a third-party package (or a native addon) fails to load: every one imported is loaded for real,
//   as are the packages imported lazily (`await import("x")`) and `createRequire(import.meta.url)("x")`.
// Then each command-line entry runs once (`mixdown help`, the model environment's printer).
//
// Usage: node --conditions=mixdown-dist --experimental-vm-modules --experimental-import-meta-resolve \
//          --disable-warning=ExperimentalWarning docker/check-load.mjs [APP_ROOT]
import { execFileSync } from "node:child_process";
import { existsSync, globSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import vm from "node:vm";

const root = process.argv[2] ?? join(fileURLToPath(import.meta.url), "..", "..");
const started = performance.now();
const problems = [];
const where = (url) => (url.startsWith("file:") ? relative(root, fileURLToPath(url)) : url);
const problem = (from, specifier, message) => problems.push(`${where(from)}: "${specifier}": ${message}`);

const ours = globSync("{apps,packages}/*/dist/**/*.js", { cwd: root })
  .sort()
  .map((file) => pathToFileURL(join(root, file)).href);
if (ours.length === 0) {
  console.error(`check-load: no compiled module under ${root}/{apps,packages}/*/dist (run pnpm build)`);
  process.exit(1);
}
const isOurs = (url) => /\/(apps|packages)\/[^/]+\/dist\/.*\.js$/.test(url) && !url.includes("/node_modules/");

const modules = new Map(); // URL -> vm.Module
const loaded = new Set(); // third-party and built-in modules loaded for real
const reported = new WeakSet(); // errors already named by the linker

function resolveFrom(specifier, parent) {
  const url = import.meta.resolve(specifier, parent);
  if (/^@mixdown\//.test(specifier) && !isOurs(url))
    throw new Error(`resolves to ${where(url)}, not to a compiled module (its export lacks "mixdown-dist")`);
  if (url.startsWith("file:") && !existsSync(fileURLToPath(url))) throw new Error(`${where(url)} does not exist`);
  return url;
}

async function moduleFor(url) {
  let mod = modules.get(url);
  if (mod) return mod;
  if (isOurs(url)) {
    // Parsed, never evaluated: its imports are linked by the linker below.
    mod = new vm.SourceTextModule(readFileSync(fileURLToPath(url), "utf8"), {
      identifier: url,
      initializeImportMeta: (meta) => (meta.url = url),
    });
  } else {
    const namespace = await import(url, url.endsWith(".json") ? { with: { type: "json" } } : undefined);
    loaded.add(url);
    const names = Object.keys(namespace);
    mod = new vm.SyntheticModule(
      names,
      function () {
        for (const name of names) this.setExport(name, namespace[name]);
      },
      { identifier: url },
    );
  }
  modules.set(url, mod);
  return mod;
}

async function linker(specifier, referencing) {
  let url;
  try {
    url = resolveFrom(specifier, referencing.identifier);
  } catch (error) {
    problem(referencing.identifier, specifier, error.message);
    reported.add(error);
    throw error;
  }
  try {
    return await moduleFor(url);
  } catch (error) {
    problem(referencing.identifier, specifier, `does not load: ${error.message}`);
    reported.add(error);
    throw error;
  }
}

for (const url of ours) {
  const source = readFileSync(fileURLToPath(url), "utf8");
  try {
    const mod = await moduleFor(url);
    if (mod.status === "unlinked") await mod.link(linker);
  } catch (error) {
    // A module whose import failed fails every module that imports it: only the first is named.
    if (!reported.has(error) && !/errored module|that is not linked/.test(error.message)) problem(url, "(module)", error.message);
  }
  // What it imports lazily: `import("x")` with a literal, and `createRequire(import.meta.url)("x")`.
  for (const [, specifier] of source.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g)) {
    try {
      await moduleFor(resolveFrom(specifier, url));
    } catch (error) {
      problem(url, specifier, `import() fails: ${error.message}`);
    }
  }
  for (const [, specifier] of source.matchAll(/\bcreateRequire\(import\.meta\.url\)\(\s*"([^"]+)"\s*\)/g)) {
    try {
      createRequire(url)(specifier);
      loaded.add(specifier);
    } catch (error) {
      problem(url, specifier, `require fails: ${error.message}`);
    }
  }
}

// The command-line entries, run once as the image runs them.
const node = [process.execPath, "--conditions=mixdown-dist", "--enable-source-maps"];
for (const [file, ...args] of [["apps/cli/dist/main.js", "help"], ["packages/separation/dist/model-env-cli.js"]]) {
  try {
    execFileSync(node[0], [...node.slice(1), join(root, file), ...args], { stdio: ["ignore", "ignore", "pipe"] });
  } catch (error) {
    problem(
      pathToFileURL(join(root, file)).href,
      args.join(" ") || "(run)",
      `exits ${error.status}: ${String(error.stderr).trim()}`,
    );
  }
}

const seconds = ((performance.now() - started) / 1000).toFixed(1);
if (problems.length > 0) {
  console.error(`check-load: ${problems.length} problem(s) in the production tree at ${root}:`);
  for (const line of problems) console.error(`  ${line}`);
  process.exit(1);
}
console.log(
  `check-load: ${ours.length} compiled modules linked, ${loaded.size} packages and built-ins loaded, the CLI entries ran (${seconds} s)`,
);
