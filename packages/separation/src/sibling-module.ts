/**
 * The URL of the module `name` (no extension) beside `here` (the caller's import.meta.url): the
 * `.ts` source when the caller runs from its source (tsx, Node's type stripping), the `.js` file
 * when it runs compiled (scripts/build-dist.mjs writes dist/ at the same layout as src/). For
 * worker threads, whose entry is a file, not an import that the package exports resolve.
 */
export function siblingModule(name: string, here: string): URL {
  return new URL(`${name}${here.endsWith(".ts") ? ".ts" : ".js"}`, here);
}
