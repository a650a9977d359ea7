// Compiles every workspace package's TypeScript sources (src/**/*.ts) to JavaScript in dist/, one
// file for one file (src/a/b.ts -> dist/a/b.js, with its source map), for production: the Docker
// image runs the compiled files (node --conditions=mixdown-dist, which picks each package.json
// export's "mixdown-dist" target) instead of compiling the sources with tsx at every start.
//
// One file for one file, at the same depth as its source, so that what a module finds relative to
// itself (new URL("../../../web/dist", import.meta.url), a worker thread beside it) is where it was.
// esbuild strips the types (no type check: `pnpm typecheck` does that); each relative import of a
// .ts file is rewritten to the .js file beside it; every other import is left for Node to resolve.
// apps/web is not here: Vite builds the dashboard.
//
// Before writing, it checks what production depends on, and fails naming each problem:
// - every package a module imports (after the types are stripped: `import type` is gone) is a Node
//   built-in, the package itself or one of its `dependencies` (not a devDependency: the image's
//   production tree installs dependencies only, so the import would not resolve there);
// - every export of a package's TypeScript source ("./src/x.ts") has its compiled target beside it
//   ({ "mixdown-dist": "./dist/x.js", "default": "./src/x.ts" }).
//
// Usage: node scripts/build-dist.mjs [--check] [--root DIR]   (pnpm build)
//   --check  checks and compiles in memory, writes nothing;  --root  another workspace (tests)
import { build } from "esbuild";
import { existsSync, globSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const { values: options } = parseArgs({ options: { check: { type: "boolean" }, root: { type: "string" } } });
const root = options.root ?? join(dirname(fileURLToPath(import.meta.url)), "..");
const skipped = new Set(["apps/web"]);
const builtins = new Set(builtinModules);

/** Relative imports of .ts files point at the .js file beside them; every import stays an import. */
const keepImports = {
  name: "keep-imports",
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === "entry-point") return undefined;
      const path = /^\.\.?\//.test(args.path) ? args.path.replace(/\.tsx?$/, ".js") : args.path;
      return { path, external: true };
    });
  },
};

const packageName = (specifier) =>
  specifier
    .split("/")
    .slice(0, specifier.startsWith("@") ? 2 : 1)
    .join("/");

/** What is wrong with a package's exports: a source export without its compiled target. */
function exportProblems(dir, pkg) {
  const problems = [];
  for (const [key, target] of Object.entries(pkg.exports ?? {})) {
    const source = typeof target === "string" ? target : target?.default;
    if (typeof source !== "string" || !/^\.\/src\/.*\.ts$/.test(source)) continue;
    const compiled = source.replace(/^\.\/src\//, "./dist/").replace(/\.ts$/, ".js");
    if (typeof target === "string" || target["mixdown-dist"] !== compiled)
      problems.push(`${dir}/package.json: export "${key}" needs { "mixdown-dist": "${compiled}", "default": "${source}" }`);
  }
  return problems;
}

/** What a package's compiled modules import that its production install would not have. */
function importProblems(dir, pkg, metafile) {
  const allowed = new Set([pkg.name, ...Object.keys(pkg.dependencies ?? {})]);
  const problems = new Set();
  for (const [output, { imports }] of Object.entries(metafile.outputs)) {
    for (const { path, external } of imports) {
      if (!external || /^\.\.?\//.test(path) || path.startsWith("node:") || builtins.has(path)) continue;
      if (allowed.has(packageName(path))) continue;
      const devOnly = pkg.devDependencies?.[packageName(path)] ? " (a devDependency: move it to dependencies)" : "";
      problems.add(
        `${relative(root, output).replace(/\/dist\/(.*)\.js$/, "/src/$1.ts")} imports "${path}", not in ${pkg.name}'s dependencies${devOnly}`,
      );
    }
  }
  return [...problems];
}

const packages = globSync("{apps,packages}/*/package.json", { cwd: root })
  .map((file) => dirname(file))
  .filter((dir) => !skipped.has(dir) && existsSync(join(root, dir, "src")))
  .sort();

const started = performance.now();
const problems = [];
const outputs = [];
let files = 0;
for (const dir of packages) {
  const pkgDir = join(root, dir);
  const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
  const entryPoints = globSync("src/**/*.ts", { cwd: pkgDir })
    .filter((file) => !file.endsWith(".d.ts"))
    .map((file) => join(pkgDir, file));
  const result = await build({
    entryPoints,
    outdir: join(pkgDir, "dist"),
    outbase: join(pkgDir, "src"),
    bundle: true,
    plugins: [keepImports],
    platform: "node",
    format: "esm",
    target: "node24",
    sourcemap: "linked",
    sourcesContent: false,
    logLevel: "warning",
    tsconfig: existsSync(join(pkgDir, "tsconfig.json")) ? join(pkgDir, "tsconfig.json") : undefined,
    metafile: true,
    write: false,
  });
  problems.push(...exportProblems(dir, pkg), ...importProblems(dir, pkg, result.metafile));
  outputs.push({ pkgDir, files: result.outputFiles });
  files += entryPoints.length;
}
if (problems.length > 0) {
  console.error(`build-dist: ${problems.length} problem(s):`);
  for (const line of problems) console.error(`  ${line}`);
  process.exit(1);
}
if (!options.check) {
  for (const { pkgDir, files: written } of outputs) {
    rmSync(join(pkgDir, "dist"), { recursive: true, force: true });
    for (const file of written) {
      mkdirSync(dirname(file.path), { recursive: true });
      writeFileSync(file.path, file.contents);
    }
  }
}
const seconds = ((performance.now() - started) / 1000).toFixed(1);
console.log(
  `build-dist: ${files} files of ${packages.length} packages ${options.check ? "checked" : "compiled"} in ${seconds} s`,
);
