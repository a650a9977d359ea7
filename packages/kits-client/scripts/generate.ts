// `pnpm --filter @mixdown/kits-client generate`: src/schema.ts from openapi.json (which
// `pnpm --filter @mixdown/api openapi` writes; `pnpm client:generate` runs both).
import { writeFile } from "node:fs/promises";
import { renderSchema, SCHEMA_PATH } from "./schema.ts";

await writeFile(SCHEMA_PATH, await renderSchema());
console.log(`wrote ${SCHEMA_PATH}`);
