// Run by storage.test.ts in a process of its own: which AWS SDK modules are loaded after
// createStorage for S3, and after the storage's first call, printed as one JSON line.
import { registerHooks } from "node:module";
import { loadConfig } from "@mixdown/config";

const loaded = new Set<string>();
registerHooks({
  resolve(specifier, context, next) {
    if (specifier.startsWith("@aws-sdk/")) loaded.add(specifier);
    return next(specifier, context);
  },
});
const { createStorage, LazyS3Storage } = await import("../../src/index.ts");
const storage = createStorage(loadConfig({ ...process.env, STORAGE_DRIVER: "s3" }));
const created = [...loaded];
if (!(storage instanceof LazyS3Storage)) throw new Error("not the lazy S3 storage");
await storage.storage();
console.log(JSON.stringify({ created, used: [...loaded].sort() }));
