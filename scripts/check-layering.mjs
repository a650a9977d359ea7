#!/usr/bin/env node
// `pnpm deps:check [--root DIR]`: the layering rules of docs/ARCHITECTURE.md, checked over the
// imports of every source, script and test file of the workspace.
//
// Two cruises by dependency-cruiser, then two checks of the package manifests:
//   1. `.dependency-cruiser.cjs`: who may import whom, type-only imports included (a type import
//      couples the two as much as a value import does).
//   2. `.dependency-cruiser.runtime.cjs`: what a process loads when it runs, so type-only imports
//      are left out (TypeScript elides them): the API and the web app never reach onnxruntime.
//   3. Every bare import (`@mixdown/db`, `fastify`) is declared by the importing folder's own
//      package.json: in `dependencies` when a source file loads it at run time, in
//      `devDependencies` at least for a test, a script or a type-only import. A workspace package
//      reached through a sibling's declaration works in development and breaks the production
//      install (issue 52).
//   4. No package export points into `scripts/` or `test/`.
// Prints every violation, one per line, and exits 1 when there is any. `--json` prints them as a
// JSON array instead (the suite's layering test reads that).
import { readdir, readFile } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { cruise } from "dependency-cruiser";
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options";

const here = fileURLToPath(new URL("..", import.meta.url));
const { values } = parseArgs({ options: { root: { type: "string" }, json: { type: "boolean" } } });
const root = resolve(values.root ?? here);
/** What is cruised: every workspace folder, and the root's own scripts. */
const TOP_FOLDERS = ["apps", "packages", "scripts"];

/** @typedef {{ rule: string, from: string, to: string, why: string }} Violation */

/**
 * The violations of one configuration's rules, and the modules cruised (with their imports).
 * @returns {Promise<{ violations: Violation[], modules: any[] }>}
 */
async function cruiseWith(configFile, folders) {
  // The rules' paths are relative to the cruised root, so the cruise runs from there.
  const options = await extractDepcruiseOptions(join(here, configFile));
  const { output } = await cruise(folders, { ...options, baseDir: root, outputType: "json" }, options.enhancedResolveOptions);
  const result = typeof output === "string" ? JSON.parse(output) : output;
  const comments = new Map(options.ruleSet.forbidden.map((rule) => [rule.name, rule.comment ?? ""]));
  const violations = result.summary.violations.map((v) => ({
    rule: v.rule.name,
    from: v.from,
    to: [...(v.via ?? []).map((step) => step.name).filter((name) => name !== v.to), v.to].join(" -> "),
    why: comments.get(v.rule.name) ?? "",
  }));
  return { violations: shortestChains(violations), modules: result.modules };
}

/**
 * A reachability rule is reported for every module from which the forbidden one can be reached;
 * only the chains that do not run through another reported module are kept (each break once).
 */
function shortestChains(violations) {
  const froms = new Set(violations.map((v) => `${v.rule}\0${v.from}`));
  return violations.filter((v) => {
    const steps = v.to.split(" -> ").slice(0, -1);
    return !steps.some((step) => froms.has(`${v.rule}\0${step}`));
  });
}

/** The package.json that governs a file: its workspace folder's, else the root's. */
function manifestFolderOf(file) {
  const match = /^((?:apps|packages)\/[^/]+)\//.exec(file);
  return match ? match[1] : ".";
}

/** `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`; null for relative and core imports. */
function packageNameOf(specifier) {
  if (specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("node:")) return null;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/** @returns {Promise<Violation[]>} */
async function checkDeclaredImports(modules) {
  const manifests = new Map();
  const manifestOf = async (folder) => {
    if (!manifests.has(folder)) manifests.set(folder, JSON.parse(await readFile(join(root, folder, "package.json"), "utf8")));
    return manifests.get(folder);
  };
  /** @type {Violation[]} */
  const out = [];
  for (const module of modules) {
    if (module.source.includes("node_modules/")) continue;
    const folder = manifestFolderOf(module.source);
    const manifest = await manifestOf(folder);
    // A workspace package's src/ is what ships; its tests, scripts and config files do not.
    const ships = folder !== "." && /^(?:apps|packages)\/[^/]+\/src\//.test(module.source);
    for (const dep of module.dependencies) {
      if (dep.coreModule) continue;
      const name = packageNameOf(dep.module);
      if (name === null || name === manifest.name) continue;
      const runtime = ships && !dep.dependencyTypes.includes("type-only");
      const declared = manifest.dependencies?.[name] ?? manifest.optionalDependencies?.[name];
      const declaredDev = manifest.devDependencies?.[name] ?? manifest.peerDependencies?.[name];
      if (declared !== undefined || (!runtime && declaredDev !== undefined)) continue;
      out.push({
        rule: "imports-declared",
        from: module.source,
        to: dep.module,
        why:
          declaredDev !== undefined
            ? `${name} is a devDependency of ${folder}/package.json, but this file loads it at run time: move it to dependencies`
            : `${name} is not declared in ${folder}/package.json (${runtime ? "dependencies" : "dependencies or devDependencies"})`,
      });
    }
  }
  return out;
}

/** @returns {Promise<Violation[]>} */
async function checkExports() {
  /** @type {Violation[]} */
  const out = [];
  for (const top of ["apps", "packages"]) {
    for (const entry of await readdir(join(root, top), { withFileTypes: true }).catch(() => [])) {
      if (!entry.isDirectory()) continue;
      const folder = `${top}/${entry.name}`;
      const manifest = JSON.parse(await readFile(join(root, folder, "package.json"), "utf8").catch(() => "{}"));
      const targets = (value) => (typeof value === "string" ? [value] : Object.values(value ?? {}).flatMap(targets));
      for (const [subpath, value] of Object.entries(manifest.exports ?? {}))
        for (const target of targets(value))
          if (/^\.\/(scripts|test)\//.test(target))
            out.push({
              rule: "exports-from-src",
              from: `${folder}/package.json`,
              to: `${subpath} -> ${target}`,
              why: "A package exports only what ships (src/, its build, data files): scripts and tests stay its own.",
            });
    }
  }
  return out;
}

const folders = [];
for (const top of TOP_FOLDERS)
  if (
    await readdir(join(root, top))
      .then(() => true)
      .catch(() => false)
  )
    folders.push(top);

const imports = await cruiseWith(".dependency-cruiser.cjs", folders);
const runtime = await cruiseWith(
  ".dependency-cruiser.runtime.cjs",
  folders.filter((f) => f !== "scripts"),
);
const violations = [
  ...imports.violations,
  ...runtime.violations,
  ...(await checkDeclaredImports(imports.modules)),
  ...(await checkExports()),
];

if (values.json) console.log(JSON.stringify(violations, null, 2));
else {
  for (const v of violations) console.log(`${v.rule}: ${v.from} -> ${v.to}\n    ${v.why}`);
  console.log(
    violations.length === 0
      ? `layering: every rule holds (${relative(process.cwd(), root) || "."})`
      : `layering: ${violations.length} violation(s)`,
  );
}
process.exitCode = violations.length === 0 ? 0 : 1;
