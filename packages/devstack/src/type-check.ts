import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * The TypeScript errors of `source` as if it were a file of the package at `packageDir` (its
 * imports resolve from there), compiled with the repository's tsconfig.base.json by the
 * repository's own `tsc`. For tests that hold a rule to the compiler: "a registry missing a kind
 * does not compile". The file lives in a temporary folder inside the package, removed after.
 */
export async function typeErrorsOf(packageDir: string, source: string): Promise<string[]> {
  const tsc = join(dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin", "tsc");
  const dir = await mkdtemp(join(resolve(packageDir), ".type-check-"));
  try {
    await writeFile(join(dir, "check.ts"), source);
    await writeFile(
      join(dir, "tsconfig.json"),
      JSON.stringify({ extends: join(resolve(packageDir), "..", "..", "tsconfig.base.json"), include: ["check.ts"] }),
    );
    const out = await run(process.execPath, [tsc, "-p", join(dir, "tsconfig.json"), "--pretty", "false"]).then(
      (r) => r.stdout,
      (error: { stdout?: string; code?: number }) => {
        if (typeof error.stdout !== "string" || (error.code !== 1 && error.code !== 2)) throw error;
        return error.stdout;
      },
    );
    return out.split("\n").filter((line) => /error TS\d+/.test(line));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The TypeScript errors of a list (`list`, exported by `module`) typed as `type` (exported there
 * too) whole, and again without its entry `key`: for tests that a list of kinds missing one does
 * not compile. `preamble` is prepended (an import that brings the package's module augmentations).
 */
export async function typeErrorsWithout(
  packageDir: string,
  { module, list, type, key, preamble = "" }: { module: string; list: string; type: string; key: string; preamble?: string },
): Promise<{ whole: string[]; without: string[] }> {
  const check = (value: string) => `${preamble}
    import { ${list}, type ${type} } from ${JSON.stringify(module)};
    const { ${JSON.stringify(key)}: removed, ...rest } = ${list};
    export const checked: ${type} = ${value};
    void removed;
    void rest;
  `;
  return { whole: await typeErrorsOf(packageDir, check(list)), without: await typeErrorsOf(packageDir, check("rest")) };
}
