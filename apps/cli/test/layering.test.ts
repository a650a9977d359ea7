import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, test } from "node:test";
import { promisify } from "node:util";
import { repoRoot } from "./run-cli.ts";

const run = promisify(execFile);
const CHECK = join(repoRoot, "scripts/check-layering.mjs");

interface Violation {
  rule: string;
  from: string;
  to: string;
  why: string;
}

/** `pnpm deps:check --json` over `root`: its violations (the script exits 1 when there are any). */
async function violationsOf(root: string): Promise<Violation[]> {
  const { stdout } = await run(process.execPath, [CHECK, "--root", root, "--json"], { maxBuffer: 16 * 1024 * 1024 }).catch(
    (err: { code?: number; stdout?: string; stderr?: string }) => {
      if (err.code === 1 && err.stdout) return { stdout: err.stdout };
      throw new Error(`check-layering failed: ${err.stderr}`);
    },
  );
  return JSON.parse(stdout) as Violation[];
}

test("the workspace keeps every layering rule of docs/ARCHITECTURE.md (pnpm deps:check)", async () => {
  const violations = await violationsOf(repoRoot);
  assert.deepEqual(
    violations.map((v) => `${v.rule}: ${v.from} -> ${v.to}`),
    [],
  );
});

/** The names of every rule the check enforces: the two configurations' and the script's own two. */
async function ruleNames(): Promise<string[]> {
  const require = createRequire(import.meta.url);
  const names: string[] = [];
  for (const file of [".dependency-cruiser.cjs", ".dependency-cruiser.runtime.cjs"])
    names.push(...(require(join(repoRoot, file)) as { forbidden: Array<{ name: string }> }).forbidden.map((r) => r.name));
  const script = await readFile(CHECK, "utf8");
  for (const [, name] of script.matchAll(/rule: "([a-z-]+)"/g)) names.push(name!);
  return [...new Set(names)].sort();
}

let scratch: string | undefined;
after(() => (scratch ? rm(scratch, { recursive: true, force: true }) : undefined));

test("each layering rule fails when broken: a workspace that breaks every rule once is reported rule by rule", async () => {
  scratch = await mkdtemp(join(tmpdir(), "mixdown-layering-"));
  const root = scratch;
  const put = async (path: string, text: string) => {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  };
  const manifest = (name: string, extra: object = {}) => JSON.stringify({ name, type: "module", ...extra });
  await put("package.json", manifest("fixture"));
  // A package standing in for onnxruntime-node, where Node would find it.
  await put("node_modules/onnxruntime-node/package.json", manifest("onnxruntime-node", { main: "index.js" }));
  await put("node_modules/onnxruntime-node/index.js", "export const InferenceSession = {};\n");
  for (const name of ["config", "db", "jobs", "voice", "separation"])
    await put(`packages/${name}/package.json`, manifest(`@mixdown/${name}`, { exports: { ".": "./src/index.ts" } }));
  await mkdir(join(root, "node_modules/@mixdown"), { recursive: true });
  for (const name of ["config", "db"]) await symlink(join(root, "packages", name), join(root, "node_modules/@mixdown", name));
  await put("apps/api/package.json", manifest("@mixdown/api"));
  await put("apps/web/package.json", manifest("@mixdown/web"));
  await put("apps/worker/package.json", manifest("@mixdown/worker"));

  await put("packages/db/src/index.ts", 'import { server } from "../../../apps/api/src/server.ts";\nexport const db = server;\n');
  await put("apps/api/src/server.ts", "export const server = 1;\n");
  await put("packages/config/src/index.ts", 'export { db } from "../../db/src/index.ts";\n');
  await put("packages/jobs/src/index.ts", 'export { db } from "../../db/src/index.ts";\n');
  await put("apps/worker/src/index.ts", "export const worker = 1;\n");
  await put(
    "apps/api/src/index.ts",
    'export { worker } from "../../worker/src/index.ts";\nexport { speak } from "../../../packages/voice/src/index.ts";\n',
  );
  await put(
    "packages/voice/package.json",
    manifest("@mixdown/voice", { exports: { ".": "./src/index.ts" }, dependencies: { "onnxruntime-node": "*" } }),
  );
  await put(
    "packages/voice/src/index.ts",
    'import { InferenceSession } from "onnxruntime-node";\nexport const speak = InferenceSession;\n',
  );
  await put("apps/web/src/main.ts", 'import { speak } from "../../../packages/voice/src/index.ts";\nconsole.log(speak);\n');
  await put("packages/voice/src/store.ts", 'export { db } from "../../db/src/index.ts";\n');
  await put("packages/db/src/media.ts", 'export { speak } from "../../voice/src/index.ts";\n');
  await put("packages/separation/scripts/tool.ts", "export const tool = 1;\n");
  await put("packages/voice/scripts/bench.ts", 'export { tool } from "../../separation/scripts/tool.ts";\n');
  await put("packages/separation/test/support.ts", "export const support = 1;\n");
  await put(
    "packages/separation/package.json",
    manifest("@mixdown/separation", {
      exports: { ".": "./src/index.ts", "./tool": "./scripts/tool.ts" },
      devDependencies: { "@mixdown/db": "workspace:*" },
    }),
  );
  await put(
    "packages/separation/src/index.ts",
    [
      'export { support } from "../test/support.ts";',
      'export { gone } from "./missing.ts";',
      'export { loadConfig } from "@mixdown/config";',
      'export { db } from "@mixdown/db";',
      "",
    ].join("\n"),
  );

  const found = await violationsOf(root);
  const has = (rule: string, from: string, to: RegExp) =>
    assert.ok(
      found.some((v) => v.rule === rule && v.from === from && to.test(v.to)),
      `${rule} not reported for ${from} -> ${to}; reported: ${JSON.stringify(found, null, 2)}`,
    );
  has("apps-above-packages", "packages/db/src/index.ts", /^apps\/api\/src\/server\.ts$/);
  has("apps-apart", "apps/api/src/index.ts", /^apps\/worker\/src\/index\.ts$/);
  has("config-is-a-leaf", "packages/config/src/index.ts", /^packages\/db\/src\/index\.ts$/);
  has("jobs-is-a-leaf", "packages/jobs/src/index.ts", /^packages\/db\/src\/index\.ts$/);
  has("web-through-typed-client", "apps/web/src/main.ts", /^packages\/voice\/src\/index\.ts$/);
  has("inference-without-http-or-database", "packages/voice/src/store.ts", /^packages\/db\/src\/index\.ts$/);
  has("database-without-inference", "packages/db/src/media.ts", /^packages\/voice\/src\/index\.ts$/);
  has("scripts-stay-home", "packages/voice/scripts/bench.ts", /^packages\/separation\/scripts\/tool\.ts$/);
  has("tests-are-not-imported", "packages/separation/src/index.ts", /^packages\/separation\/test\/support\.ts$/);
  has("no-unresolvable", "packages/separation/src/index.ts", /missing\.ts$/);
  has("api-without-onnxruntime", "apps/api/src/index.ts", /packages\/voice\/src\/index\.ts -> node_modules\/onnxruntime-node\//);
  has("web-without-onnxruntime", "apps/web/src/main.ts", /node_modules\/onnxruntime-node\//);
  has("imports-declared", "packages/separation/src/index.ts", /^@mixdown\/config$/);
  has("imports-declared", "packages/separation/src/index.ts", /^@mixdown\/db$/);
  assert.match(
    found.find((v) => v.rule === "imports-declared" && v.to === "@mixdown/db")!.why,
    /devDependency .* move it to dependencies/,
  );
  has("exports-from-src", "packages/separation/package.json", /^\.\/tool -> \.\/scripts\/tool\.ts$/);
  // Every rule the check has is among those shown failing here: a new rule needs its breakage above.
  assert.deepEqual([...new Set(found.map((v) => v.rule))].sort(), await ruleNames());
});

test("the API's modules load no onnxruntime at run time (the address space after importing the app has none of it)", async () => {
  // The static check's claim, seen in a process: importing the API maps no onnxruntime library,
  // while importing the worker's speech module (which runs Piper voices) does.
  const probe = `await import(process.argv[1]);
const maps = (await import("node:fs")).readFileSync("/proc/self/maps", "utf8");
console.log(/libonnxruntime|onnxruntime_binding/.test(maps) ? "loaded" : "absent");`;
  const mapped = async (module: string) =>
    (
      await run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", probe, join(repoRoot, module)], {
        cwd: repoRoot,
      })
    ).stdout.trim();
  assert.equal(await mapped("apps/api/src/app.ts"), "absent");
  assert.equal(await mapped("packages/voice/src/speech.ts"), "loaded");
});
